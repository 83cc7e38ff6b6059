package deployment

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// Reasons a verification is not a calibration observation (status.verification.calibration).
const (
	// CalibrationDeploymentChanged: the deployment measured is not the Candidate as the operator
	// rendered and wrote it.
	CalibrationDeploymentChanged = "DeploymentChanged"
	// CalibrationNoKey: the Candidate's parameters name no calibration key.
	CalibrationNoKey = "NoCalibrationKey"
	// CalibrationNoComparedMetrics: no metric was both predicted and observed.
	CalibrationNoComparedMetrics = "NoComparedMetrics"
	// CalibrationLoadNotAsPredicted: the measurement was at another load than the prediction's,
	// so it says nothing of the prediction's error.
	CalibrationLoadNotAsPredicted = "LoadNotAsPredicted"
)

// recordCalibration adds a successful verification to the calibration profile of the request's
// namespace, where that namespace's next searches find it (docs/design/candidates.md,
// "Calibration"), and says in v.Calibration whether it did and why not. A measurement is an
// observation only of what the operator deployed: the DynamoGraphDeployment still at the
// generation measured, with the spec the operator's write of the Candidate gives it. A tenant
// edits its own deployment as it likes; such a measurement stays in status.verification, and the
// profile does not learn from it.
func (r *Reconciler) recordCalibration(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, v *v1beta2.VerificationStatus, metrics []v1beta2.VerifiedMetric) error {
	if v.MeasuredAt == nil {
		return nil
	}
	skip := func(reason, msg string) error {
		v.Calibration = &v1beta2.VerificationCalibration{Recorded: ptr.To(false), Reason: reason, Message: msg}
		ctrl.LoggerFrom(ctx).Info("verification not added to the calibration profile", "candidate", cand.Name, "reason", reason, "message", msg)
		return nil
	}
	if v.LoadAsPredicted == nil || !*v.LoadAsPredicted {
		return skip(CalibrationLoadNotAsPredicted, "the measurement was at another load than the prediction's")
	}
	key, err := calibration.CandidateKey(&dgdr.Spec, cand)
	if err != nil {
		// A Candidate without a key has no place in the profile; the verification stands.
		return skip(CalibrationNoKey, err.Error())
	}
	obs := calibration.Observation{
		Key: key, Metrics: map[string]calibration.Pair{}, MeasuredAt: v.MeasuredAt.UTC(),
		Source: fmt.Sprintf("%s/%s@gen%d", dgdr.Namespace, dgdr.Name, v.DeploymentGeneration),
	}
	for _, m := range metrics {
		if m.Predicted != nil && m.Observed != nil && *m.Predicted > 0 && *m.Observed > 0 {
			obs.Metrics[string(m.Name)] = calibration.Pair{Predicted: *m.Predicted, Observed: *m.Observed}
		}
	}
	if len(obs.Metrics) == 0 {
		return skip(CalibrationNoComparedMetrics, "no metric was both predicted and observed")
	}
	why, err := r.changedSinceWritten(ctx, dgdr, cand, v)
	if err != nil {
		return fmt.Errorf("checking the measured deployment against candidate %s: %w", cand.Name, err)
	}
	if why != "" {
		return skip(CalibrationDeploymentChanged, why)
	}
	if err := calibration.Record(ctx, r.APIReader, r.Client, dgdr.Namespace, obs); err != nil {
		return fmt.Errorf("recording the verification in the calibration profile: %w", err)
	}
	v.Calibration = &v1beta2.VerificationCalibration{Recorded: ptr.To(true)}
	return nil
}

// changedSinceWritten says how the deployment measured differs from the Candidate as the
// operator writes it, "" when it does not: the live DynamoGraphDeployment must still be at the
// generation measured, and a dry-run update that sets its spec to the Candidate's must leave it
// as it is. The dry run goes through the API server's defaulting, conversion and admission as the
// operator's write did, so fields the API server or the Dynamo platform fill in compare equal and
// every edit does not.
func (r *Reconciler) changedSinceWritten(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, v *v1beta2.VerificationStatus) (string, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(promote.GVK)
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: v.Deployment}, live)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("DynamoGraphDeployment %s no longer exists", v.Deployment), nil
	}
	if err != nil {
		return "", err
	}
	if g := live.GetGeneration(); g != v.DeploymentGeneration {
		return fmt.Sprintf("DynamoGraphDeployment %s is at generation %d, not generation %d, which was measured: it changed since", v.Deployment, g, v.DeploymentGeneration), nil
	}
	if by := live.GetAnnotations()[promote.AnnotationAppliedBy]; by != string(dgdr.UID) {
		return fmt.Sprintf("DynamoGraphDeployment %s was not written by this request's autoApply (%s is %q)", v.Deployment, promote.AnnotationAppliedBy, by), nil
	}
	desired, err := promote.Render(cand, v.Deployment, nil)
	if err != nil {
		return err.Error(), nil
	}
	probe := live.DeepCopy()
	probe.Object["spec"] = desired.Object["spec"]
	err = r.Client.Update(ctx, probe, client.DryRunAll)
	var status apierrors.APIStatus
	switch {
	case apierrors.IsConflict(err):
		return fmt.Sprintf("DynamoGraphDeployment %s changed while it was compared with candidate %s", v.Deployment, cand.Name), nil
	case err != nil && errors.As(err, &status) && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)):
		return fmt.Sprintf("candidate %s's spec could not be compared with DynamoGraphDeployment %s: %v", cand.Name, v.Deployment, err), nil
	case err != nil:
		return "", err
	}
	if probe.GetGeneration() != live.GetGeneration() || !equality.Semantic.DeepEqual(probe.Object["spec"], live.Object["spec"]) {
		return fmt.Sprintf("the spec of DynamoGraphDeployment %s differs from candidate %s's, which autoApply wrote: it was edited since", v.Deployment, cand.Name), nil
	}
	return "", nil
}
