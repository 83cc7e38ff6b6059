package ui

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// The view models the pages and the JSON API both show, read with the user's credentials.

// requestRows lists the requests with the progress of their newest Run.
func (s *Server) requestRows(ctx context.Context) ([]RequestRow, error) {
	rows, err := listRequests(ctx, s.c, s.ns)
	if err != nil {
		return nil, err
	}
	var runs v1beta2.DynamoGraphDeploymentRunList
	var opts []client.ListOption
	if s.ns != "" {
		opts = append(opts, client.InNamespace(s.ns))
	}
	if err := s.c.List(ctx, &runs, opts...); err == nil {
		progress := map[types.NamespacedName]resultsview.Progress{}
		for i := range runs.Items {
			progress[types.NamespacedName{Namespace: runs.Items[i].Namespace, Name: runs.Items[i].Name}] = resultsview.RunProgress(&runs.Items[i])
		}
		for i := range rows {
			run := cmp.Or(rows[i].ActiveRun, rows[i].LatestRun)
			if p, ok := progress[types.NamespacedName{Namespace: rows[i].Namespace, Name: run}]; ok && p.Total > 0 {
				rows[i].Progress = fmt.Sprintf("%d/%d", p.Settled, p.Total)
			}
		}
	}
	return rows, nil
}

// RunView is a Run on the request page. Total is what Progress.Settled counts against: the trial
// budget, or the settled trials of a search that exhausted its space before the budget
// (ProgressText says so; resultsview.RunProgress).
type RunView struct {
	Name          string                         `json:"name"`
	Phase         string                         `json:"phase"`
	Message       string                         `json:"message,omitempty"`
	Created       time.Time                      `json:"created"`
	Generation    int64                          `json:"requestGeneration,omitempty"`
	Progress      v1beta2.RunProgress            `json:"progress"`
	Percent       int                            `json:"percent"`
	Total         int64                          `json:"total"`
	ProgressText  string                         `json:"progressText"`
	BestCandidate string                         `json:"bestCandidate,omitempty"`
	InputHash     string                         `json:"inputHash,omitempty"`
	Input         string                         `json:"input,omitempty"`
	Infeasible    []ReasonCountView              `json:"infeasibleByReason,omitempty"`
	PointsSource  string                         `json:"pointsSource,omitempty"`
	Summary       *v1beta2.RecommendationSummary `json:"recommendation,omitempty"`
}

// ReasonCountView counts the candidates that were not feasible for one reason.
type ReasonCountView struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// RequestView is the request page.
type RequestView struct {
	Request  RequestRow `json:"request"`
	Runs     []RunView  `json:"runs"`
	Selected *RunView   `json:"selected,omitempty"`
	// Verification is the measurement of the deployed candidate against its prediction.
	Verification *VerificationView `json:"verification,omitempty"`
	// Research is the re-search schedule and history with ImprovementAvailable.
	Research *ResearchView `json:"research,omitempty"`
	DiffA    string        `json:"diffA,omitempty"`
	DiffB    string        `json:"diffB,omitempty"`
	Diff     []DiffLine    `json:"diff,omitempty"`
}

func runView(run *v1beta2.DynamoGraphDeploymentRun) RunView {
	v := RunView{Name: run.Name, Phase: string(run.Status.Phase), Message: run.Status.Message, Created: run.CreationTimestamp.Time,
		Summary: run.Status.Recommendation}
	if g, ok := run.Labels[v1beta2.LabelRequestGeneration]; ok {
		_, _ = fmt.Sscan(g, &v.Generation)
	}
	p := resultsview.RunProgress(run)
	v.Progress, v.Percent, v.Total, v.ProgressText = p.RunProgress, p.Percent, p.Total, p.Text()
	if rec := run.Status.Recommendation; rec != nil {
		v.BestCandidate = rec.BestCandidate
	}
	if ai := run.Status.AISimulate; ai != nil {
		v.InputHash = ai.InputHash
		if ai.Input != nil {
			v.Input = prettyJSON(ai.Input.Raw)
		}
	}
	if v.Phase == "" {
		v.Phase = "Pending"
	}
	return v
}

func (s *Server) requestView(r *http.Request) (*RequestView, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var req v1beta2.DynamoGraphDeploymentRequest
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.PathValue("name")}, &req); err != nil {
		return nil, err
	}
	runs, err := resultsview.RequestRuns(ctx, s.c, &req)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	v := &RequestView{Request: requestRow(&req, now), Runs: []RunView{}, Verification: verificationView(&req, now)}
	byName := map[string]*v1beta2.DynamoGraphDeploymentRun{}
	for i := range runs {
		v.Runs = append(v.Runs, runView(&runs[i]))
		byName[runs[i].Name] = &runs[i]
	}
	v.Research = researchView(&req, func(run string) bool { return byName[run] != nil }, now)
	sel := r.URL.Query().Get("run")
	if sel == "" && len(runs) > 0 {
		sel = runs[0].Name
	}
	if run, ok := byName[sel]; ok {
		rv := runView(run)
		cands, err := resultsview.RunCandidates(ctx, s.c, run)
		if err != nil {
			return nil, err
		}
		pts, err := runPoints(ctx, s.c, run, cands)
		if err != nil {
			return nil, err
		}
		rv.PointsSource = pts.Source
		for reason, n := range pts.Infeasible {
			rv.Infeasible = append(rv.Infeasible, ReasonCountView{reason, n})
		}
		slices.SortFunc(rv.Infeasible, func(a, b ReasonCountView) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
		})
		v.Selected = &rv
	} else if sel != "" && r.URL.Query().Get("run") != "" {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("Run %s is not a Run of request %s", sel, req.Name)}
	}
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if a == "" && b == "" && len(runs) >= 2 {
		a, b = runs[1].Name, runs[0].Name
	}
	v.DiffA, v.DiffB = a, b
	if a != "" && b != "" {
		ra, okA := byName[a]
		rb, okB := byName[b]
		if !okA || !okB {
			return nil, &httpError{http.StatusNotFound, "a and b must name Runs of the request"}
		}
		if v.Diff, err = diffJSON(inputOf(ra), inputOf(rb)); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func inputOf(run *v1beta2.DynamoGraphDeploymentRun) []byte {
	if run.Status.AISimulate == nil || run.Status.AISimulate.Input == nil {
		return nil
	}
	return run.Status.AISimulate.Input.Raw
}

// CandidateRow is one line of the ranked table.
type CandidateRow struct {
	Name              string   `json:"name"`
	Rank              int32    `json:"rank"`
	CandidateID       string   `json:"candidateID"`
	Backend           string   `json:"backend"`
	Mode              string   `json:"mode"`
	GPUs              int32    `json:"gpus"`
	ThroughputPerGPU  *float64 `json:"throughputPerGpu,omitempty"`
	ThroughputPerUser *float64 `json:"throughputPerUser,omitempty"`
	TTFTMs            *float64 `json:"ttftMs,omitempty"`
	ITLMs             *float64 `json:"itlMs,omitempty"`
	E2EMs             *float64 `json:"e2eMs,omitempty"`
	// Cost is what the candidate costs at the price its Run recorded (none without pricing).
	Cost *v1beta2.CandidateCost `json:"cost,omitempty"`
	// Provisional marks a candidate published while its search ran (its rank may change).
	Provisional bool `json:"provisional,omitempty"`
	// ParetoRole is why the candidate was chosen from the Pareto front.
	ParetoRole string `json:"paretoRole,omitempty"`
}

// CandidatesView is the candidates page.
type CandidatesView struct {
	Namespace  string           `json:"namespace"`
	Run        string           `json:"run"`
	Request    string           `json:"request"`
	Phase      string           `json:"phase"`
	SLA        *v1beta2.SLASpec `json:"sla,omitempty"`
	Points     *Points          `json:"plot"`
	Candidates []CandidateRow   `json:"candidates"`
	plot       template.HTML
}

func (s *Server) candidatesView(r *http.Request) (*CandidatesView, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var run v1beta2.DynamoGraphDeploymentRun
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.PathValue("run")}, &run); err != nil {
		return nil, err
	}
	cands, err := resultsview.RunCandidates(ctx, s.c, &run)
	if err != nil {
		return nil, err
	}
	pts, err := runPoints(ctx, s.c, &run, cands)
	if err != nil {
		return nil, err
	}
	// The deployed candidate is drawn when the user may read the request; the plot stands without.
	var req v1beta2.DynamoGraphDeploymentRequest
	if name := run.Labels[v1beta2.LabelRequestName]; name != "" && s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &req) == nil {
		pts.markDeployed(&req, run.Name)
	}
	v := &CandidatesView{Namespace: ns, Run: run.Name, Request: run.Labels[v1beta2.LabelRequestName], Phase: string(run.Status.Phase),
		SLA: run.Spec.SLA, Points: pts, Candidates: []CandidateRow{}}
	for i := range cands {
		c := &cands[i]
		row := CandidateRow{Name: c.Name, Rank: c.Status.Rank, CandidateID: c.Status.CandidateID, Backend: string(c.Spec.Backend),
			Mode: string(c.Spec.Mode), GPUs: c.Spec.GPUs, Provisional: c.Status.Provisional}
		if m := c.Status.Metrics; m != nil {
			row.ThroughputPerGPU, row.ThroughputPerUser, row.TTFTMs, row.ITLMs, row.E2EMs = m.ThroughputPerGPU, m.ThroughputPerUser, m.TTFTMs, m.ITLMs, m.E2EMs
			row.Cost = m.Cost
		}
		row.ParetoRole = string(c.Status.ParetoRole)
		v.Candidates = append(v.Candidates, row)
	}
	v.plot = renderPlot(pts, run.Spec.SLA)
	return v, nil
}

// CandidateView is the candidate page and the promote preview.
type CandidateView struct {
	Namespace string
	Candidate *v1beta2.DynamoGraphDeploymentCandidate
	Run       string
	Request   string
	Name      string
	YAML      string
	RunError  string
	Result    string
	Error     string
	Preview   bool
	Force     bool
	// VersionSkew is the VersionSkew condition's message when it is True: the prediction rests
	// on another engine version than the runtime image runs.
	VersionSkew string
	// Verification is set when the candidate is the one its request deployed and verified.
	Verification *VerificationView
}

func (s *Server) candidate(r *http.Request) (*v1beta2.DynamoGraphDeploymentCandidate, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := s.c.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: r.PathValue("name")}, &cand); err != nil {
		return nil, err
	}
	return &cand, nil
}

// renderDGD is what `dgdrctl promote --dry-run` prints: promote.Render without an owner, as YAML.
func renderDGD(cand *v1beta2.DynamoGraphDeploymentCandidate, name string) (string, error) {
	obj, err := promote.Render(cand, name, nil)
	if err != nil {
		return "", err
	}
	data, err := yaml.Marshal(obj.Object)
	return string(data), err
}

func (s *Server) candidateView(r *http.Request, cand *v1beta2.DynamoGraphDeploymentCandidate, name string) *CandidateView {
	v := &CandidateView{Namespace: cand.Namespace, Candidate: cand, Run: cand.Labels[v1beta2.LabelRunName],
		Request: cand.Labels[v1beta2.LabelRequestName], Name: cmp.Or(name, cand.Labels[v1beta2.LabelRequestName], cand.Name)}
	var err error
	if v.YAML, err = renderDGD(cand, v.Name); err != nil {
		v.Error = err.Error()
	}
	if err := promote.CheckRunSucceeded(r.Context(), s.c, cand); err != nil {
		v.RunError = err.Error()
	}
	if c := meta.FindStatusCondition(cand.Status.Conditions, v1beta2.ConditionVersionSkew); c != nil && c.Status == metav1.ConditionTrue {
		v.VersionSkew = c.Message
	}
	v.Verification = s.candidateVerification(r.Context(), cand)
	return v
}

// candidateVerification is the verification of cand when its request deployed it; nil otherwise,
// and when the user may not read the request (the page stands without).
func (s *Server) candidateVerification(ctx context.Context, cand *v1beta2.DynamoGraphDeploymentCandidate) *VerificationView {
	name := cand.Labels[v1beta2.LabelRequestName]
	if name == "" {
		return nil
	}
	var req v1beta2.DynamoGraphDeploymentRequest
	if s.c.Get(ctx, types.NamespacedName{Namespace: cand.Namespace, Name: name}, &req) != nil {
		return nil
	}
	st := req.Status.Verification
	if st == nil || st.Candidate != cand.Name || (st.Run != "" && st.Run != cand.Labels[v1beta2.LabelRunName]) {
		return nil
	}
	return verificationView(&req, time.Now())
}
