package ui

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
)

// RequestRow is one line of the requests page.
type RequestRow struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	Model         string `json:"model"`
	State         string `json:"state"`
	ActiveRun     string `json:"activeRun,omitempty"`
	LatestRun     string `json:"latestRun,omitempty"`
	BestCandidate string `json:"bestCandidate,omitempty"`
	// Progress is settled/budget of the active (else the latest) Run.
	Progress string    `json:"progress,omitempty"`
	Age      string    `json:"age"`
	Created  time.Time `json:"created"`
}

func requestRow(r *v1beta2.DynamoGraphDeploymentRequest, now time.Time) RequestRow {
	row := RequestRow{Namespace: r.Namespace, Name: r.Name, Model: r.Spec.Model.Name, Created: r.CreationTimestamp.Time,
		Age: duration.HumanDuration(now.Sub(r.CreationTimestamp.Time))}
	if r.IsV1Beta1Native() {
		row.Model = "(v1beta1 request)"
	}
	if r.Status.ActiveRunRef != nil {
		row.ActiveRun = r.Status.ActiveRunRef.Name
	}
	if lr := r.Status.LatestRun; lr != nil {
		row.LatestRun = lr.Name
		row.BestCandidate = lr.BestCandidate
		row.State = string(lr.Phase)
		if lr.Reason != "" && lr.Reason != string(lr.Phase) {
			row.State += " (" + lr.Reason + ")"
		}
	}
	if row.ActiveRun != "" {
		row.State = "Searching"
		if r.Status.LatestRun != nil && r.Status.LatestRun.Name == row.ActiveRun && r.Status.LatestRun.Phase != "" {
			row.State = string(r.Status.LatestRun.Phase)
		}
	}
	if row.State == "" {
		row.State = "Pending"
	}
	return row
}

// listRequests lists the requests in ns ("" for all namespaces), sorted by namespace and name.
func listRequests(ctx context.Context, c client.Reader, ns string) ([]RequestRow, error) {
	var list v1beta2.DynamoGraphDeploymentRequestList
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	now := time.Now()
	rows := make([]RequestRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, requestRow(&list.Items[i], now))
	}
	slices.SortFunc(rows, func(a, b RequestRow) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return rows, nil
}

// Point is one feasible evaluated candidate of a search.
type Point struct {
	ID                string   `json:"id"`
	Backend           string   `json:"backend"`
	Mode              string   `json:"mode"`
	GPUs              int      `json:"gpus"`
	ThroughputPerGPU  float64  `json:"throughputPerGpu"`
	ThroughputPerUser float64  `json:"throughputPerUser"`
	TTFTMs            *float64 `json:"ttftMs,omitempty"`
	ITLMs             *float64 `json:"itlMs,omitempty"`
	E2EMs             *float64 `json:"e2eMs,omitempty"`
	// Cost is the point's cost at the price its Run recorded (none without pricing).
	Cost  *v1beta2.CandidateCost `json:"cost,omitempty"`
	Shape string                 `json:"shape,omitempty"`
	// Published names the Candidate object this point was published as ("" when it was not).
	Published string `json:"published,omitempty"`
	Rank      int32  `json:"rank,omitempty"`
	// ParetoRole is why the published candidate was chosen from the Pareto front.
	ParetoRole string `json:"paretoRole,omitempty"`
	// Deployed names the DynamoGraphDeployment the request deployed this point as (autoApply).
	Deployed string `json:"deployed,omitempty"`
	Front    bool   `json:"front"`
	// ErrorBand is the recommender's expected error on the point's latencies.
	ErrorBand *v1beta2.MetricsErrorBand `json:"errorBand,omitempty"`
	// metrics are all the point's predicted metrics (the hover text shows them).
	metrics *v1beta2.CandidateMetrics
}

// Sources of the points.
const (
	SourceRecommendation = "recommendation.json"
	SourceEvents         = "execution-events.jsonl"
	SourceCandidates     = "published candidates"
)

// Points is the data of the candidates page's plot.
type Points struct {
	// Source is where the points come from: the kept recommendation.json, the kept events
	// ledger (when recommendation.json was cut), or only the published Candidates (no artifacts).
	Source string `json:"source"`
	// Note explains a source other than the whole recommendation.json.
	Note      string  `json:"note,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
	Evaluated int     `json:"evaluated"`
	Points    []Point `json:"points"`
	// Front lists the IDs of the Pareto front, by increasing throughput per user.
	Front []string `json:"front"`
	// Infeasible counts the evaluated candidates that were not feasible, by reason category.
	Infeasible map[string]int `json:"infeasible,omitempty"`
	// price is the Run's recorded price, which the points' costs are computed at.
	price *v1beta2.RunPricing
}

// loadArtifacts reads the Run's artifacts ConfigMap; nil when there is none, or when the one
// of that name is not the Run's own (never trusted).
func loadArtifacts(ctx context.Context, c client.Reader, run *v1beta2.DynamoGraphDeploymentRun) (*candidates.Artifacts, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: candidates.ArtifactsName(run)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	art, err := candidates.ReadArtifacts(run, &cm)
	if err != nil {
		return nil, nil
	}
	return art, nil
}

// runPoints builds the plot's points: every feasible evaluated candidate of the kept
// recommendation.json, or of the kept events ledger when recommendation.json was cut, or the
// published Candidates when the Run kept no artifacts.
func runPoints(ctx context.Context, c client.Reader, run *v1beta2.DynamoGraphDeploymentRun, cands []v1beta2.DynamoGraphDeploymentCandidate) (*Points, error) {
	art, err := loadArtifacts(ctx, c, run)
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, err
	}
	p := &Points{Points: []Point{}, Front: []string{}, price: run.Status.Pricing}
	switch {
	case err != nil:
		p.Note = "You may not read the Run's kept search artifacts (ConfigMap " + candidates.ArtifactsName(run) + "): the plot shows only the published candidates."
	case art == nil:
		p.Note = "This Run kept no search artifacts: the plot shows only the published candidates."
	default:
		p.Truncated = art.Truncated("") || (run.Status.Artifacts != nil && run.Status.Artifacts.Truncated)
		rec, rerr := art.File(jobcontract.ArtifactRecommendationKey)
		if rerr != nil || !p.fromRecommendation(rec) {
			if events, err := art.File(jobcontract.ArtifactEventsKey); err != nil || !p.fromEvents(events) {
				p.Note = "The Run's kept search artifacts could not be read: the plot shows only the published candidates."
			}
		}
	}
	if p.Source == "" {
		p.Source = SourceCandidates
		if rec := run.Status.Recommendation; rec != nil && len(rec.InfeasibleReasons) > 0 {
			p.Infeasible = map[string]int{}
			for _, r := range rec.InfeasibleReasons {
				p.Infeasible[r.Category] = int(r.Count)
			}
		}
		p.Points = p.Points[:0]
		for i := range cands {
			cand := &cands[i]
			m := cand.Status.Metrics
			if m == nil || m.ThroughputPerGPU == nil || m.ThroughputPerUser == nil {
				continue
			}
			p.Points = append(p.Points, Point{ID: cmp.Or(cand.Status.CandidateID, cand.Name), Backend: string(cand.Spec.Backend),
				Mode: string(cand.Spec.Mode), GPUs: int(cand.Spec.GPUs), ThroughputPerGPU: *m.ThroughputPerGPU,
				ThroughputPerUser: *m.ThroughputPerUser, TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, E2EMs: m.E2EMs, Cost: m.Cost,
				ErrorBand: m.ErrorBand, metrics: m})
		}
		p.Evaluated = len(p.Points)
	}
	byID := map[string]*v1beta2.DynamoGraphDeploymentCandidate{}
	for i := range cands {
		byID[cmp.Or(cands[i].Status.CandidateID, cands[i].Name)] = &cands[i]
	}
	for i := range p.Points {
		if cand, ok := byID[p.Points[i].ID]; ok {
			p.Points[i].Published, p.Points[i].Rank = cand.Name, cand.Status.Rank
			p.Points[i].ParetoRole = string(cand.Status.ParetoRole)
		}
	}
	p.Front = paretoFront(p.Points)
	front := map[string]bool{}
	for _, id := range p.Front {
		front[id] = true
	}
	for i := range p.Points {
		p.Points[i].Front = front[p.Points[i].ID]
	}
	return p, nil
}

// markDeployed marks the point the request deployed from run (status.deployment), if any.
func (p *Points) markDeployed(req *v1beta2.DynamoGraphDeploymentRequest, run string) {
	d := req.Status.Deployment
	if d == nil || d.Run != run {
		return
	}
	for i := range p.Points {
		if p.Points[i].Published == d.Candidate {
			p.Points[i].Deployed = d.Name
		}
	}
}

// fromRecommendation takes the points of the kept recommendation.json, data; false when it does
// not parse.
func (p *Points) fromRecommendation(data []byte) bool {
	res, err := output.ParseSweepResult(data)
	if err != nil {
		// Cut to fit the ConfigMap: the events ledger names every candidate instead.
		p.Note = "recommendation.json was cut to fit the Run's artifacts; the points come from the events ledger."
		return false
	}
	p.Source = SourceRecommendation
	p.Infeasible = map[string]int{}
	for i := range res.Candidates {
		rec := &res.Candidates[i]
		p.Evaluated++
		if rec.Status != output.StatusFeasible {
			p.Infeasible[cmp.Or(rec.ReasonCategory, rec.Status)]++
			continue
		}
		pt, ok := pointOf(rec, p.price)
		if ok {
			p.Points = append(p.Points, pt)
		}
	}
	return true
}

// fromEvents takes the points of the kept events ledger, data; false when it does not parse.
func (p *Points) fromEvents(data []byte) bool {
	events, err := output.ReadEvents(bytes.NewReader(data))
	if err != nil {
		return false
	}
	p.Source = SourceEvents
	if p.Note == "" {
		p.Note = "The points come from the kept events ledger."
	}
	if p.Truncated {
		p.Note += " The artifacts were cut to fit their ConfigMap: candidates settled after the cut are missing."
	}
	p.Infeasible = map[string]int{}
	for i := range events {
		// Each candidate_completed event carries the candidate's whole record (output.Event),
		// as recommendation.json does; cache hits have none.
		rec, err := events[i].Candidate()
		if err != nil {
			continue
		}
		p.Evaluated++
		if rec.Status != output.StatusFeasible {
			p.Infeasible[cmp.Or(rec.ReasonCategory, rec.Status)]++
			continue
		}
		if pt, ok := pointOf(rec, p.price); ok {
			p.Points = append(p.Points, pt)
		}
	}
	return true
}

// pointOf maps a candidate record to a point with the published Candidates' metric mapping
// (candidates.Metrics) and cost at price; backend, mode and shape come from its prediction
// configuration.
func pointOf(rec *output.Candidate, price *v1beta2.RunPricing) (Point, bool) {
	m := candidates.Metrics(rec)
	if m.ThroughputPerGPU == nil || m.ThroughputPerUser == nil {
		return Point{}, false
	}
	pt := Point{ID: rec.CandidateID, GPUs: rec.UsedGPUs,
		ThroughputPerGPU: *m.ThroughputPerGPU, ThroughputPerUser: *m.ThroughputPerUser,
		TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, E2EMs: m.E2EMs, ErrorBand: m.ErrorBand, metrics: m,
		Cost: pricing.Cost(price, int32(rec.UsedGPUs), m.Throughput)}
	if pc := rec.PredictionConfig; pc != nil {
		pt.Backend, pt.Mode, pt.Shape = pc.Engine.Backend, pc.Engine.Mode, shapeOf(pc)
	}
	return pt, true
}

// roleAbbrev names a role in a shape.
var roleAbbrev = map[string]string{output.RoleAggregated: "agg", output.RolePrefill: "prefill", output.RoleDecode: "decode"}

// shapeOf describes the parallelism of a deployment: "agg tp2 ×2" or "prefill tp1 ×1, decode
// tp4 ×1", and its concurrency.
func shapeOf(pc *output.PredictionConfig) string {
	var parts []string
	for role, w := range pc.Engine.Workers.All() {
		name, ok := roleAbbrev[role]
		if !ok {
			continue
		}
		par := w.Parallelism
		s := fmt.Sprintf("%s tp%d", name, par.Tensor)
		if par.Pipeline > 1 {
			s += fmt.Sprintf(" pp%d", par.Pipeline)
		}
		if par.AttentionData > 1 {
			s += fmt.Sprintf(" dp%d", par.AttentionData)
		}
		if par.MoEExpert > 1 {
			s += fmt.Sprintf(" ep%d", par.MoEExpert)
		}
		if par.Replicas > 0 {
			s += fmt.Sprintf(" ×%d", par.Replicas)
		}
		parts = append(parts, s)
	}
	if t := pc.Traffic; t != nil && t.Load.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", t.Load.Concurrency))
	}
	return strings.Join(parts, ", ")
}

// paretoFront returns the IDs of the points no other point dominates, by increasing throughput
// per user, then ID.
func paretoFront(pts []Point) []string {
	objectives := func(p Point) (float64, float64) { return p.ThroughputPerGPU, p.ThroughputPerUser }
	front := []string{}
	for _, p := range output.ParetoFront(pts, objectives, func(a, b Point) int { return strings.Compare(a.ID, b.ID) }) {
		front = append(front, p.ID)
	}
	return front
}

// prettyJSON indents raw JSON; the raw text when it does not parse.
func prettyJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}
