package candidates

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Settled is a feasible candidate of the ledger, with what rendering it needs.
type Settled struct {
	ID string
	// Config is the record's prediction_config as JSON: the configuration rendered, and what
	// tells identical configurations apart.
	Config string
	// Record is the record's id, status, score (set and finite), GPUs, metrics and error band.
	Record *output.Candidate
	// Role is why it was chosen from the Pareto front of those settled so far (Pareto only).
	Role v1beta2.ParetoRole
	// order is when it settled (BestSoFar's tie-break).
	order int
}

// BestSoFar keeps the best Limit feasible candidates settled so far, best first by the
// recommender's ranking rule (output.CompareRank), ties to the earlier settled; memory stays
// bounded by Limit. With Pareto, it keeps the Pareto front of those settled so far instead, and
// lists the spread of at most Limit of its points the final publication would choose
// (output.SpreadFront), in front order; memory is then bounded by the front. A Limit of 0 keeps
// none.
type BestSoFar struct {
	Limit  int
	Pareto bool
	seq    int
	list   []Settled
	// front is the Pareto front so far, by increasing throughput per user (Pareto only).
	front []Settled
}

func better(a, b Settled) bool {
	settledFirst := func(*output.Candidate, *output.Candidate) int { return cmp.Compare(a.order, b.order) }
	return output.CompareRank(a.Record, b.Record, settledFirst) < 0
}

// offer ranks c among the best so far (c settled after every candidate offered before).
func (b *BestSoFar) offer(c Settled) {
	b.seq++
	c.order = b.seq
	if b.Limit <= 0 {
		return
	}
	if b.Pareto {
		b.offerToFront(c)
		return
	}
	for _, x := range b.list {
		if x.ID == c.ID || x.Config == c.Config {
			return // the recommender keeps the first of identical configurations
		}
	}
	// The first entry c is better than (ties go after: c settled last).
	i := len(b.list)
	for j := range b.list {
		if better(c, b.list[j]) {
			i = j
			break
		}
	}
	if i >= b.Limit {
		return
	}
	b.list = slices.Insert(b.list, i, c)
	if len(b.list) > b.Limit {
		b.list = b.list[:b.Limit]
	}
}

// offerToFront adds c to the Pareto front so far when no point of it dominates c, and chooses
// the spread of the new front.
func (b *BestSoFar) offerToFront(c Settled) {
	for _, x := range b.front {
		if x.ID == c.ID || x.Config == c.Config {
			return // the recommender keeps the first of identical configurations
		}
	}
	objectives := func(s Settled) (float64, float64) { return FrontObjectives(s.Record) }
	settledFirst := func(a, b Settled) int { return cmp.Compare(a.order, b.order) }
	b.front = output.ParetoFront(append(b.front, c), objectives, settledFirst)
	picks := output.SpreadFront(b.front, b.Limit, objectives)
	b.list = make([]Settled, len(picks))
	for i, p := range picks {
		b.list[i] = b.front[p.Index]
		b.list[i].Role = v1beta2.ParetoRole(p.Role)
	}
}

// List is the best so far, best first (not to be modified).
func (b *BestSoFar) List() []Settled { return b.list }

// Signature identifies the ranking (ids in order, with their Pareto roles).
func (b *BestSoFar) Signature() string {
	ids := make([]string, len(b.list))
	for i, c := range b.list {
		ids[i] = c.ID
		if c.Role != "" {
			ids[i] += "=" + string(c.Role)
		}
	}
	return strings.Join(ids, ",")
}

// offerRecord offers a feasible candidate_completed record with a finite score and its concrete
// configuration; any other is ignored.
func (b *BestSoFar) offerRecord(c *output.Candidate) {
	if c.Score == nil || math.IsNaN(*c.Score) || math.IsInf(*c.Score, 0) || c.PredictionConfig == nil {
		return
	}
	key, err := json.Marshal(c.PredictionConfig)
	if err != nil {
		return
	}
	// Only what rendering needs is kept: AISimulate's sample config and provenance are large.
	rec := &output.Candidate{CandidateID: c.CandidateID, Status: c.Status, UsedGPUs: c.UsedGPUs, Score: c.Score,
		Metrics: c.Metrics, ErrorBand: c.ErrorBand}
	b.offer(Settled{ID: c.CandidateID, Config: string(key), Record: rec})
}
