package candidates

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// View names of recommendation.json.
const (
	ViewTopN        = "top_n"
	ViewParetoFront = "pareto_front"
)

// Options are what rendering a Candidate needs besides the Run and the record.
type Options struct {
	// RuntimeImages maps backends to Dynamo runtime images and their engine versions.
	RuntimeImages map[string]v1alpha1.RuntimeImage
	// GPUsPerNode is the node size used to render multinode workers.
	GPUsPerNode int
	// PlannerImage is the image of the rendered Planner component (planner.enabled).
	PlannerImage string
	// Now stamps the Evaluated condition (default time.Now).
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Pareto tells whether spec asks for the Pareto front (objective.target pareto).
func Pareto(spec *v1beta2.DynamoGraphDeploymentRequestSpec) bool {
	return spec.Objective != nil && spec.Objective.Target == v1beta2.TargetPareto
}

// MaxCandidates is the Run's spec.recommendation.maxCandidates, or its default.
func MaxCandidates(run *v1beta2.DynamoGraphDeploymentRun) int {
	if rs := run.Spec.Recommendation; rs != nil && rs.MaxCandidates != nil && *rs.MaxCandidates > 0 {
		return int(*rs.MaxCandidates)
	}
	return specdefaults.MaxCandidatesFor(&run.Spec)
}

// ViewName is the view recommendation.json ranks its candidates in.
func ViewName(s *output.SweepResult) string {
	if len(s.Views.ParetoFront) > 0 {
		return ViewParetoFront
	}
	return ViewTopN
}

// ReadResult reads recommendation.json of the output directory dir through the output caps
// (searchoutput.ReadCapped, at most searchoutput.MaxRecommendationBytes).
func ReadResult(dir string) (*output.SweepResult, error) {
	data, err := searchoutput.ReadCapped(filepath.Join(dir, output.RecommendationFile), output.RecommendationFile, searchoutput.MaxRecommendationBytes)
	if err != nil {
		return nil, err
	}
	sweep, err := output.ParseSweepResult(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", output.RecommendationFile, err)
	}
	return sweep, nil
}

// FromOutput returns the Candidates the reporter publishes for run from the search output in
// dir, best first.
func FromOutput(run *v1beta2.DynamoGraphDeploymentRun, dir string, o Options) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	sweep, err := ReadResult(dir)
	if err != nil {
		return nil, err
	}
	return FromResult(run, dir, sweep, o)
}

// selection is a view entry chosen for publication: its position in the view (which names its
// recommendations/NNNN.yaml) and, on a Pareto front, why it was chosen.
type selection struct {
	id    string
	index int
	role  v1beta2.ParetoRole
}

// selectFromView chooses what is published of sweep's view: the first limit entries of a top_n
// view; of a Pareto front, the spread of output.SpreadFront, in front order.
func selectFromView(sweep *output.SweepResult, limit int) ([]selection, error) {
	ids := sweep.Views.Selected()
	if ViewName(sweep) != ViewParetoFront {
		ids = ids[:min(len(ids), limit)]
		out := make([]selection, len(ids))
		for i, id := range ids {
			out[i] = selection{id: id, index: i}
		}
		return out, nil
	}
	recs := make([]*output.Candidate, len(ids))
	for i, id := range ids {
		rec, ok := sweep.Candidate(id)
		if !ok {
			return nil, fmt.Errorf("recommendation.json: view entry %s has no candidate record", id)
		}
		recs[i] = rec
	}
	picks := output.SpreadFront(recs, limit, FrontObjectives)
	out := make([]selection, len(picks))
	for i, p := range picks {
		out[i] = selection{id: ids[p.Index], index: p.Index, role: v1beta2.ParetoRole(p.Role)}
	}
	return out, nil
}

// FrontObjectives reads a record's throughput per GPU and per user as its published metrics do
// (Metrics); a missing one reads as 0.
func FrontObjectives(rec *output.Candidate) (perGPU, perUser float64) {
	m := Metrics(rec)
	if m.ThroughputPerGPU != nil {
		perGPU = *m.ThroughputPerGPU
	}
	if m.ThroughputPerUser != nil {
		perUser = *m.ThroughputPerUser
	}
	return perGPU, perUser
}

// FromResult builds the Candidates of sweep (recommendation.json of the output directory dir) in
// view order, at most MaxCandidates(run): the first ones of a top_n view, a spread of a Pareto
// front (selectFromView). Each configuration is read through the output caps; a file that breaks
// them is a searchoutput.RejectedError.
func FromResult(run *v1beta2.DynamoGraphDeploymentRun, dir string, sweep *output.SweepResult, o Options) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	sel, err := selectFromView(sweep, MaxCandidates(run))
	if err != nil {
		return nil, err
	}
	out := make([]v1beta2.DynamoGraphDeploymentCandidate, 0, len(sel))
	var recs *os.File // the recommendations directory, opened once and read by descriptor
	for i, s := range sel {
		id := s.id
		rec, ok := sweep.Candidate(id)
		if !ok {
			return nil, fmt.Errorf("recommendation.json: view entry %s has no candidate record", id)
		}
		path := output.RecommendationPath(dir, s.index)
		if i == 0 {
			var err error
			if recs, err = searchoutput.OpenSubdir(dir, output.RecommendationsDir); err != nil {
				if searchoutput.IsRejected(err) {
					return nil, err
				}
				return nil, fmt.Errorf("reading the configuration of %s: %w", id, err)
			}
			defer recs.Close()
		}
		data, err := searchoutput.ReadCappedIn(recs, filepath.Base(path), searchoutput.Rel(dir, path), searchoutput.MaxConfigurationBytes)
		if err != nil {
			if searchoutput.IsRejected(err) {
				return nil, err
			}
			return nil, fmt.Errorf("reading the configuration of %s: %w", id, err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c, err := Render(run, sweep.Provenance, ViewName(sweep), rec, doc, i+1, o)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", id, path, err)
		}
		setParetoRole(c, s.role)
		out = append(out, *c)
	}
	return out, nil
}

// Provisional renders the best candidates so far, of settled candidates in all, as provisional
// Candidates: no rank label, since ranks move between rounds and a round cut short must not leave
// two Candidates labelled with the same rank. A candidate that cannot be rendered is left out and
// handed to skipped.
func Provisional(run *v1beta2.DynamoGraphDeploymentRun, best []Settled, settled int64, o Options, skipped func(id string, err error)) []v1beta2.DynamoGraphDeploymentCandidate {
	prov := output.Provenance{Implementation: "the search"}
	out := make([]v1beta2.DynamoGraphDeploymentCandidate, 0, len(best))
	for _, sc := range best {
		var doc map[string]any
		if err := json.Unmarshal([]byte(sc.Config), &doc); err != nil {
			continue
		}
		rank := len(out) + 1
		c, err := Render(run, prov, ViewTopN, sc.Record, doc, rank, o)
		if err != nil {
			skipped(sc.ID, err)
			continue
		}
		c.Status.Provisional = true
		delete(c.Labels, v1beta2.LabelCandidateRank)
		c.Status.Conditions[0].Message = fmt.Sprintf("provisional: rank %d of the best candidates among %d settled so far; the final ranking replaces it when the search ends", rank, settled)
		setParetoRole(c, sc.Role)
		out = append(out, *c)
	}
	return out
}

// setParetoRole records why c was chosen from a Pareto front, in its status and in the Evaluated
// condition's message; nothing for a candidate of another view.
func setParetoRole(c *v1beta2.DynamoGraphDeploymentCandidate, role v1beta2.ParetoRole) {
	if role == "" {
		return
	}
	c.Status.ParetoRole = role
	c.Status.Conditions[0].Message += ", chosen as " + string(role)
}

// Render builds the Candidate of rank of the record rec whose configuration is doc, predicted by
// prov and ranked in view. The configuration is decoded here once (render.Decode); the renderer
// and the calibration read the typed document. A configuration the renderer cannot lower
// (render.NotRenderableError) is still a Candidate, Evaluated, with an empty graphDeployment and
// Deployable False naming every field it cannot lower.
func Render(run *v1beta2.DynamoGraphDeploymentRun, prov output.Provenance, view string, rec *output.Candidate, doc map[string]any, rank int, o Options) (*v1beta2.DynamoGraphDeploymentCandidate, error) {
	name := naming.CandidateName(run.Name, rec.CandidateID)
	d, err := render.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	typed := d.Typed
	deployable := metav1.Condition{Type: v1beta2.ConditionDeployable, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonRendered,
		Message: "every deployment setting of spec.parameters is rendered into spec.graphDeployment"}
	gd := []byte("{}")
	dgd, sum, err := d.Render(render.RunOptions(run, name, config.RuntimeImageRefs(o.RuntimeImages), o.GPUsPerNode, o.PlannerImage))
	var refused *render.NotRenderableError
	switch {
	case errors.As(err, &refused):
		deployable.Status, deployable.Reason = metav1.ConditionFalse, v1beta2.ReasonNotRenderable
		deployable.Message = truncate(fmt.Sprintf("not deployable: the renderer cannot lower %s (%s); spec.graphDeployment is empty",
			strings.Join(refused.Paths(), ", "), refused.Error()), maxConditionMessage)
		sum = render.Summary{Backend: typed.Engine.Backend, Mode: typed.Engine.Mode}
		if sum.Backend == "" {
			sum.Backend = output.BackendVLLM
		}
	case err != nil:
		return nil, fmt.Errorf("rendering: %w", err)
	default:
		if gd, err = json.Marshal(dgd); err != nil {
			return nil, err
		}
	}
	params := d.Parameters
	gpus := rec.UsedGPUs
	if gpus <= 0 {
		gpus = sum.GPUs
	}
	mode := v1beta2.ModeAggregated
	if sum.Mode == render.ModeDisaggregated {
		mode = v1beta2.ModeDisaggregated
	}
	versions := &v1beta2.CandidateEngineVersions{
		PerformanceData: performanceDataVersion(typed, rec),
		Runtime:         o.RuntimeImages[sum.Backend].EngineVersion,
	}
	labels := map[string]string{
		v1beta2.LabelRunName:       run.Name,
		v1beta2.LabelRunUID:        string(run.UID),
		v1beta2.LabelCandidateRank: strconv.Itoa(rank),
	}
	for _, k := range []string{v1beta2.LabelRequestName, v1beta2.LabelRequestUID, v1beta2.LabelRequestGeneration} {
		if v, ok := run.Labels[k]; ok {
			labels[k] = v
		}
	}
	metrics := Metrics(rec)
	now := metav1.NewTime(o.now().Truncate(time.Second))
	deployable.LastTransitionTime = now
	skew := versionSkew(versions, sum.Backend)
	skew.LastTransitionTime = now
	// The cost is computed here, in the search pod, from the price the Run recorded.
	metrics.Cost = pricing.Cost(run.Status.Pricing, int32(gpus), metrics.Throughput)
	c := &v1beta2.DynamoGraphDeploymentCandidate{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentCandidate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: run.Namespace,
			Labels:    labels,
		},
		Spec: v1beta2.DynamoGraphDeploymentCandidateSpec{
			Backend:         v1beta2.Backend(sum.Backend),
			Mode:            mode,
			GPUs:            int32(gpus),
			GraphDeployment: runtime.RawExtension{Raw: gd},
			Parameters:      runtime.RawExtension{Raw: params},
		},
		Status: v1beta2.DynamoGraphDeploymentCandidateStatus{
			Rank:           int32(rank),
			CandidateID:    rec.CandidateID,
			Metrics:        metrics,
			Display:        Display(metrics),
			EngineVersions: versions,
			Conditions: []metav1.Condition{{
				Type:               v1beta2.ConditionEvaluated,
				Status:             metav1.ConditionTrue,
				Reason:             v1beta2.ReasonFeasible,
				Message:            fmt.Sprintf("predicted by %s %s; rank %d of view %s", prov.Implementation, prov.ImplementationVersion, rank, view),
				LastTransitionTime: now,
			}, deployable, skew},
		},
	}
	// So is the calibrated prediction, from the corrections the Run recorded.
	if run.Status.Calibration != nil {
		key, err := calibration.PredictionKey(&run.Spec, c.Spec.Backend, c.Spec.Mode, typed)
		if err != nil {
			return nil, fmt.Errorf("spec.parameters of Candidate %s: %w", c.Name, err)
		}
		c.Status.Calibration = calibration.Apply(run.Status.Calibration, key.Backend, key.Mode, key.Parallelism, metrics)
	}
	if err := controllerutil.SetControllerReference(run, c, scheme.Scheme); err != nil {
		return nil, err
	}
	return c, nil
}

// maxConditionMessage is the API server's bound on a condition's message.
const maxConditionMessage = 32768

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// performanceDataVersion is the engine version of the performance data a prediction used:
// engine.backend_version of the document (AISimulate writes it into every recommendation), else
// the backend_version the search recorded in the candidate's provenance (aisim records it there).
func performanceDataVersion(p *output.PredictionConfig, rec *output.Candidate) string {
	v := p.Engine.BackendVersion
	if v == "" {
		v, _ = rec.Provenance["backend_version"].(string)
	}
	if len(v) > config.MaxEngineVersionLength {
		return ""
	}
	return v
}

// versionSkew is the VersionSkew condition of versions (its time left unset).
func versionSkew(v *v1beta2.CandidateEngineVersions, backend string) metav1.Condition {
	c := metav1.Condition{Type: v1beta2.ConditionVersionSkew}
	switch {
	case v.PerformanceData == "" || v.Runtime == "":
		c.Status, c.Reason = metav1.ConditionUnknown, v1beta2.ReasonEngineVersionUnknown
		c.Message = fmt.Sprintf("%s version of the performance data %q, of the runtime image %q: not both known", backend, v.PerformanceData, v.Runtime)
	case v.PerformanceData != v.Runtime:
		c.Status, c.Reason = metav1.ConditionTrue, v1beta2.ReasonEngineVersionsDiffer
		c.Message = fmt.Sprintf("predicted from %s %s performance data; the runtime image runs %s %s", backend, v.PerformanceData, backend, v.Runtime)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1beta2.ReasonEngineVersionsMatch
		c.Message = fmt.Sprintf("predicted from %s %s performance data, the version the runtime image runs", backend, v.Runtime)
	}
	return c
}
