package ui

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
)

// maxArtifactBytes bounds what one decompressed artifact of a Run (jobcontract.ArtifactsName)
// may expand to.
const maxArtifactBytes = 64 << 20

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
	Shape             string   `json:"shape,omitempty"`
	// Published names the Candidate object this point was published as ("" when it was not).
	Published string `json:"published,omitempty"`
	Rank      int32  `json:"rank,omitempty"`
	Front     bool   `json:"front"`
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
}

// loadArtifacts reads the Run's artifacts ConfigMap; nil when there is none.
func loadArtifacts(ctx context.Context, c client.Reader, run *v1beta2.DynamoGraphDeploymentRun) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: artifactsName(run)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ref := controllerUID(&cm); ref != string(run.UID) {
		return nil, nil // not the Run's own: never trusted
	}
	return &cm, nil
}

// artifactsName is the Run's artifacts ConfigMap: the one its status names, else the name the
// reporter gives it (jobcontract.ArtifactsName).
func artifactsName(run *v1beta2.DynamoGraphDeploymentRun) string {
	if a := run.Status.Artifacts; a != nil && a.ConfigMapName != "" {
		return a.ConfigMapName
	}
	return jobcontract.ArtifactsName(run.UID)
}

func controllerUID(cm *corev1.ConfigMap) string {
	for _, r := range cm.OwnerReferences {
		if r.Controller != nil && *r.Controller && r.Kind == "DynamoGraphDeploymentRun" {
			return string(r.UID)
		}
	}
	return ""
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxArtifactBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxArtifactBytes {
		return nil, fmt.Errorf("more than %d bytes", maxArtifactBytes)
	}
	return out, nil
}

// runPoints builds the plot's points: every feasible evaluated candidate of the kept
// recommendation.json, or of the kept events ledger when recommendation.json was cut, or the
// published Candidates when the Run kept no artifacts.
func runPoints(ctx context.Context, c client.Reader, run *v1beta2.DynamoGraphDeploymentRun, cands []v1beta2.DynamoGraphDeploymentCandidate) (*Points, error) {
	cm, err := loadArtifacts(ctx, c, run)
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, err
	}
	p := &Points{Points: []Point{}, Front: []string{}}
	switch {
	case err != nil:
		p.Note = "You may not read the Run's kept search artifacts (ConfigMap " + artifactsName(run) + "): the plot shows only the published candidates."
	case cm == nil:
		p.Note = "This Run kept no search artifacts: the plot shows only the published candidates."
	default:
		p.Truncated = cm.Annotations[jobcontract.AnnotationArtifactsTruncated] != "" || (run.Status.Artifacts != nil && run.Status.Artifacts.Truncated)
		if ok := p.fromRecommendation(cm); !ok {
			if ok := p.fromEvents(cm); !ok {
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
				ThroughputPerUser: *m.ThroughputPerUser, TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, E2EMs: m.E2EMs})
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

func (p *Points) fromRecommendation(cm *corev1.ConfigMap) bool {
	z, ok := cm.BinaryData[jobcontract.ArtifactRecommendationKey]
	if !ok {
		return false
	}
	data, err := gunzip(z)
	if err != nil {
		return false
	}
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
		pt, ok := pointOf(rec, rec.Config)
		if ok {
			p.Points = append(p.Points, pt)
		}
	}
	return true
}

func (p *Points) fromEvents(cm *corev1.ConfigMap) bool {
	z, ok := cm.BinaryData[jobcontract.ArtifactEventsKey]
	if !ok {
		return false
	}
	data, err := gunzip(z)
	if err != nil {
		return false
	}
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
		if pt, ok := pointOf(rec, rec.Config); ok {
			p.Points = append(p.Points, pt)
		}
	}
	return true
}

// pointOf maps a candidate record to a point with the published Candidates' metric mapping
// (candidates.Metrics).
func pointOf(rec *output.Candidate, cfg map[string]any) (Point, bool) {
	m := candidates.Metrics(rec)
	if m.ThroughputPerGPU == nil || m.ThroughputPerUser == nil {
		return Point{}, false
	}
	backend, _ := cfg["backend"].(string)
	mode, _ := cfg["mode"].(string) // aisim's sample; AISimulate's says deployment_mode
	if mode == "" {
		mode, _ = cfg["deployment_mode"].(string)
	}
	switch mode {
	case "agg":
		mode = string(v1beta2.ModeAggregated)
	case "disagg":
		mode = string(v1beta2.ModeDisaggregated)
	}
	return Point{ID: rec.CandidateID, Backend: backend, Mode: mode, GPUs: rec.UsedGPUs,
		ThroughputPerGPU: *m.ThroughputPerGPU, ThroughputPerUser: *m.ThroughputPerUser,
		TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, E2EMs: m.E2EMs, Shape: shapeOf(cfg)}, true
}

// shapeOf describes the parallelism of a sample: "agg tp2 x2" or "prefill tp1 x1, decode tp4 x1".
func shapeOf(cfg map[string]any) string {
	num := func(k string) (int, bool) {
		switch v := cfg[k].(type) {
		case int64: // the output readers keep integers (sigs.k8s.io/json PreserveInts)
			return int(v), true
		case float64:
			return int(v), true
		}
		return 0, false
	}
	var parts []string
	for _, role := range []string{"agg", "prefill", "decode"} {
		key := role + "_"
		tp, ok := num(key + "tp")
		if !ok && role == "agg" && cfg["deployment_mode"] == "agg" {
			// AISimulate's aggregated sample names its knobs without a role: tp, pp, replicas.
			key = ""
			tp, ok = num("tp")
		}
		if !ok {
			continue
		}
		s := fmt.Sprintf("%s tp%d", role, tp)
		if pp, ok := num(key + "pp"); ok && pp > 1 {
			s += fmt.Sprintf(" pp%d", pp)
		}
		if dp, ok := num(key + "attention_dp"); ok && dp > 1 {
			s += fmt.Sprintf(" dp%d", dp)
		}
		if ep, ok := num(key + "moe_ep"); ok && ep > 1 {
			s += fmt.Sprintf(" ep%d", ep)
		}
		if r, ok := num(key + "replicas"); ok {
			s += fmt.Sprintf(" ×%d", r)
		}
		parts = append(parts, s)
	}
	if c, ok := num("concurrency"); ok {
		parts = append(parts, fmt.Sprintf("concurrency %d", c))
	}
	return strings.Join(parts, ", ")
}

// paretoFront returns the IDs of the points no other point dominates (at least as much
// throughput per GPU and per user, more of one), by increasing throughput per user.
func paretoFront(pts []Point) []string {
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	// Decreasing throughput per user; ties by decreasing throughput per GPU, then decreasing ID
	// (reversed below: the front reads by increasing throughput per user, then ID).
	slices.SortFunc(idx, func(a, b int) int {
		pa, pb := pts[a], pts[b]
		return cmp.Or(cmp.Compare(pb.ThroughputPerUser, pa.ThroughputPerUser),
			cmp.Compare(pb.ThroughputPerGPU, pa.ThroughputPerGPU), strings.Compare(pb.ID, pa.ID))
	})
	var front []string
	bestGPU, bestUser := -1.0, -1.0
	for _, i := range idx {
		p := pts[i]
		// A point equal to the one that set the best throughput per GPU is not dominated either.
		if p.ThroughputPerGPU > bestGPU || (p.ThroughputPerGPU == bestGPU && p.ThroughputPerUser == bestUser) {
			front = append(front, p.ID)
			bestGPU, bestUser = p.ThroughputPerGPU, p.ThroughputPerUser
		}
	}
	slices.Reverse(front)
	if front == nil {
		front = []string{}
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
