package deployment

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
)

// recordCalibration adds a successful verification to the cluster's calibration profile, where
// the next searches find it (docs/design/results.md, "Calibration"). A measurement at another
// load than the prediction's says nothing of the prediction's error: it is not added.
func (r *Reconciler) recordCalibration(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, v *v1beta2.VerificationStatus, metrics []v1beta2.VerifiedMetric) error {
	ns := r.Config.Calibration.Namespace
	if ns == "" || v.MeasuredAt == nil || v.LoadAsPredicted == nil || !*v.LoadAsPredicted {
		return nil
	}
	key, err := calibration.CandidateKey(&dgdr.Spec, cand)
	if err != nil {
		// A Candidate without a key has no place in the profile; the verification stands.
		ctrl.LoggerFrom(ctx).Info("verification not added to the calibration profile", "candidate", cand.Name, "reason", err.Error())
		return nil
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
		return nil
	}
	if err := calibration.Record(ctx, r.APIReader, r.Client, ns, obs); err != nil {
		return fmt.Errorf("recording the verification in the calibration profile: %w", err)
	}
	return nil
}
