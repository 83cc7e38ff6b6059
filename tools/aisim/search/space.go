// Package search enumerates the legal deployment space of a recommend
// document, selects candidates within the trial budget, evaluates them with
// the perf model in parallel, and ranks them per AISimulate's scoring rules.
package search

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// Env is what every evaluation needs.
type Env struct {
	Doc   *input.Document
	Model *catalog.Model
	GPU   catalog.GPU
	// RoleGPU holds the hardware overrides of disaggregated roles (engine.workers.<role>.hardware);
	// a role without one runs on GPU. See GPUFor.
	RoleGPU map[string]catalog.GPU
	// Trace is the replayed trace of a trace source (LoadTrace reads it).
	Trace *trace.Trace
}

// GPUFor is the hardware a role's workers run on: its override, or engine.hardware.
func (e *Env) GPUFor(role string) catalog.GPU {
	if g, ok := e.RoleGPU[role]; ok {
		return g
	}
	return e.GPU
}

// RoleGPUs resolves the per-role hardware overrides of a decoded document. An unknown id is an
// error naming engine.workers.<role>.hardware.
func RoleGPUs(doc *input.Document) (map[string]catalog.GPU, error) {
	var out map[string]catalog.GPU
	for _, role := range []string{input.RolePrefill, input.RoleDecode} {
		w := doc.Engine.Workers[role]
		if w == nil || w.Hardware == "" {
			continue
		}
		g, err := catalog.LookupGPU(w.Hardware)
		if err != nil {
			return nil, fmt.Errorf("engine.workers.%s.hardware: %w", role, err)
		}
		if out == nil {
			out = map[string]catalog.GPU{}
		}
		out[role] = g
	}
	return out, nil
}

// RoleSpec is one role's concrete configuration inside a candidate.
type RoleSpec struct {
	Role   string
	Worker perf.WorkerConfig
}

// Point is one candidate before evaluation.
type Point struct {
	Mode    string
	Backend string
	Roles   []RoleSpec // aggregated: [aggregated]; disaggregated: [prefill, decode]
	Load    float64    // concurrency, request rate or KV fraction
	// Unsupported is set for user-pinned shapes the engine cannot run.
	Unsupported string
}

// UsedGPUs sums the role GPU counts.
func (p Point) UsedGPUs() int {
	n := 0
	for _, r := range p.Roles {
		n += r.Worker.Shape.GPUs()
	}
	return n
}

// Role returns the spec for a role name.
func (p Point) Role(name string) *RoleSpec {
	for i := range p.Roles {
		if p.Roles[i].Role == name {
			return &p.Roles[i]
		}
	}
	return nil
}

// topology identifies a point without its load value. It is a comparable value rather than a
// formatted string: sample keys every point of the space by it (hundreds of thousands at a
// 64-GPU budget), and formatting them was a fifth of a whole recommend. Points have one role
// (aggregated) or two (prefill, decode).
type topology struct {
	mode, backend string
	roles         int
	role          [2]RoleSpec
}

// topologyKey returns the point's topology.
func (p Point) topologyKey() topology {
	if len(p.Roles) > len(topology{}.role) {
		panic(fmt.Sprintf("a point has %d roles", len(p.Roles)))
	}
	k := topology{mode: p.Mode, backend: p.Backend, roles: len(p.Roles)}
	copy(k.role[:], p.Roles)
	return k
}

// sameTopology tells cheaply that two points certainly have the same topology: same mode and
// backend, and the very same roles array.
func sameTopology(a, b Point) bool {
	return a.Mode == b.Mode && a.Backend == b.Backend && len(a.Roles) == len(b.Roles) &&
		len(a.Roles) > 0 && &a.Roles[0] == &b.Roles[0]
}

// workerLadder is AISimulate's GPUs-per-worker ladder for preset: default.
var workerLadder = []int{1, 2, 4, 8, 16}

// roleShape is a worker shape plus whether replicas are still free (to be
// filled from the budget) or pinned by the user.
type roleShape struct {
	shape       input.Shape
	replicasSet []int // nil = 1..budget/gpus
	pinned      bool  // user-specified: illegal shapes become unsupported candidates
}

// budget is the GPU ceiling used for generation (unbounded for predict).
func (e *Env) budget() int {
	if e.Doc.Command == input.Predict {
		return 1 << 20
	}
	return e.Doc.Optimization.MaxGPUs
}

// legal returns why a shape cannot run the model (empty when it can).
func (e *Env) legal(s input.Shape) string {
	m := e.Model
	switch {
	case s.Tensor < 1 || s.AttentionData < 1 || s.MoETensor < 1 || s.MoEExpert < 1 || s.Replicas < 1:
		return "parallel sizes must be >= 1"
	case s.Pipeline != 1:
		return "pipeline parallelism is not modelled"
	case m.Heads%s.Tensor != 0:
		return fmt.Sprintf("num_attention_heads %d is not divisible by tensor %d", m.Heads, s.Tensor)
	case m.KVHeads%s.Tensor != 0 && s.Tensor%m.KVHeads != 0:
		return fmt.Sprintf("num_key_value_heads %d and tensor %d do not divide each other", m.KVHeads, s.Tensor)
	}
	if !m.IsMoE() {
		if s.AttentionData != 1 || s.MoETensor != 1 || s.MoEExpert != 1 {
			return "attention_data, moe_tensor and moe_expert must be 1 for a dense model"
		}
		if m.Intermediate%s.Tensor != 0 {
			return fmt.Sprintf("intermediate_size %d is not divisible by tensor %d", m.Intermediate, s.Tensor)
		}
		return ""
	}
	if s.MoETensor*s.MoEExpert != s.Tensor*s.AttentionData {
		return fmt.Sprintf("moe_tensor × moe_expert (%d) must equal tensor × attention_data (%d)", s.MoETensor*s.MoEExpert, s.Tensor*s.AttentionData)
	}
	if m.Experts%s.MoEExpert != 0 {
		return fmt.Sprintf("num_experts %d is not divisible by moe_expert %d", m.Experts, s.MoEExpert)
	}
	if m.MoEIntermediate%s.MoETensor != 0 {
		return fmt.Sprintf("moe_intermediate_size %d is not divisible by moe_tensor %d", m.MoEIntermediate, s.MoETensor)
	}
	return ""
}

// defaultWorkerShapes is the generated preset: every ladder size, with the
// tensor / attention-DP / MoE-TP / MoE-EP factorizations a backend runs.
func (e *Env) defaultWorkerShapes() []input.Shape {
	var out []input.Shape
	for _, g := range workerLadder {
		if g > e.budget() {
			break
		}
		cands := []input.Shape{{Tensor: g, AttentionData: 1, MoETensor: 1, MoEExpert: 1}}
		if e.Model.IsMoE() {
			cands = []input.Shape{{Tensor: g, AttentionData: 1, MoETensor: g, MoEExpert: 1}}
			if g > 1 {
				cands = append(cands,
					input.Shape{Tensor: g, AttentionData: 1, MoETensor: 1, MoEExpert: g},
					input.Shape{Tensor: 1, AttentionData: g, MoETensor: 1, MoEExpert: g})
			}
		}
		for _, s := range cands {
			s.Pipeline, s.Replicas = 1, 1
			if e.legal(s) == "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func (e *Env) roleShapes(p input.Parallelism) []roleShape {
	switch p.Preset {
	case input.PresetDefault:
		var out []roleShape
		for _, s := range e.defaultWorkerShapes() {
			out = append(out, roleShape{shape: s})
		}
		return out
	case input.PresetCustom:
		var out []roleShape
		for _, s := range p.Custom {
			out = append(out, roleShape{shape: s, replicasSet: []int{s.Replicas}, pinned: true})
		}
		return out
	}
	// Independent knobs: explicit values pin, omitted knobs use defaults.
	vals := func(k string, def []int) []int {
		if v, ok := p.Knobs[k]; ok {
			return v
		}
		return def
	}
	dpDefault := []int{1}
	if e.Model.IsMoE() {
		dpDefault = []int{1, 2, 4, 8, 16}
	}
	_, moeTPSet := p.Knobs[input.KnobMoETensor]
	_, moeEPSet := p.Knobs[input.KnobMoEExpert]
	_, tpSet := p.Knobs[input.KnobTensor]
	_, dpSet := p.Knobs[input.KnobAttentionData]
	pinned := tpSet || dpSet || moeTPSet || moeEPSet
	var out []roleShape
	seen := map[input.Shape]bool{}
	for _, tp := range vals(input.KnobTensor, workerLadder) {
		for _, dp := range vals(input.KnobAttentionData, dpDefault) {
			g := tp * dp
			if !tpSet && !dpSet && g > e.budget() {
				continue
			}
			var moe [][2]int
			switch {
			case !e.Model.IsMoE() && !moeTPSet && !moeEPSet:
				moe = [][2]int{{1, 1}}
			case moeTPSet && moeEPSet:
				for _, a := range p.Knobs[input.KnobMoETensor] {
					for _, b := range p.Knobs[input.KnobMoEExpert] {
						moe = append(moe, [2]int{a, b})
					}
				}
			case moeTPSet:
				for _, a := range p.Knobs[input.KnobMoETensor] {
					moe = append(moe, [2]int{a, max(1, g/a)})
				}
			case moeEPSet:
				for _, b := range p.Knobs[input.KnobMoEExpert] {
					moe = append(moe, [2]int{max(1, g/b), b})
				}
			default:
				moe = [][2]int{{g, 1}, {1, g}}
			}
			for _, mm := range moe {
				s := input.Shape{Tensor: tp, Pipeline: 1, AttentionData: dp, MoETensor: mm[0], MoEExpert: mm[1], Replicas: 1}
				if seen[s] {
					continue
				}
				seen[s] = true
				// Generated combinations that are illegal are simply not part of
				// the space; ones the user pinned are reported as unsupported.
				if !pinned && e.legal(s) != "" {
					continue
				}
				rs := roleShape{shape: s, pinned: pinned}
				if r, ok := p.Knobs[input.KnobReplicas]; ok {
					rs.replicasSet, rs.pinned = r, true
				}
				out = append(out, rs)
			}
		}
	}
	return out
}

// roleConfigs expands a role's shapes and scheduler/KV choices for backend.
type roleOption struct {
	shape  roleShape
	worker perf.WorkerConfig
}

func (e *Env) roleOptions(role, backend string) []roleOption {
	w := e.Doc.Engine.Workers[role]
	mbt := w.MaxBatchedTokens
	if mbt == nil {
		mbt = []int{8192}
	}
	seqs := w.MaxSequences
	if seqs == nil {
		seqs = []int{256}
		if role == input.RolePrefill {
			seqs = []int{1}
		}
	}
	fracs := w.MemoryFraction
	if fracs == nil {
		fracs = []float64{perf.DefaultMemoryFraction(backend)}
	}
	block := w.BlockSize
	if block == 0 {
		block = perf.DefaultBlockSize(backend)
	}
	var out []roleOption
	for _, rs := range e.roleShapes(w.Parallelism) {
		for _, t := range mbt {
			for _, q := range seqs {
				for _, f := range fracs {
					wc := perf.WorkerConfig{Backend: backend, Shape: rs.shape, MaxBatchedTokens: t, MaxSequences: q,
						BlockSize: block, MemoryFraction: f, FixedBlocks: w.FixedBlocks}
					// Generated shapes whose weights leave no KV cache are pruned up
					// front, as AISimulate's preflight does; pinned ones are kept and
					// reported as infeasible.
					if !rs.pinned {
						if _, err := perf.KVCapacity(e.Model, e.GPUFor(role), wc); err != nil {
							continue
						}
					}
					out = append(out, roleOption{shape: rs, worker: wc})
				}
			}
		}
	}
	return out
}

func (e *Env) replicas(rs roleShape, free int) []int {
	if rs.replicasSet != nil {
		return rs.replicasSet
	}
	var out []int
	for r := 1; r*rs.shape.GPUsPerWorker() <= free; r++ {
		out = append(out, r)
	}
	return out
}

// Enumerate lists the full candidate space per mode branch, in a stable
// order. It fails when no branch has any runnable configuration (AISimulate
// refuses such searches before the first trial).
func (e *Env) Enumerate() (map[string][]Point, error) {
	loads := e.Doc.Traffic.Load.Intensity.Points()
	budget := e.budget()
	minGPUs := e.Doc.Optimization.MinGPUs
	out := map[string][]Point{}
	for _, mode := range e.Doc.Engine.Modes {
		// Topologies are collected first and multiplied by the loads once their number is
		// known: the space has hundreds of thousands of points at large budgets, and growing
		// it point by point allocated twice its size.
		var tops []Point
		add := func(p Point, free bool) {
			n := p.UsedGPUs()
			// Generated replica counts stay inside [min, max]; pinned ones are
			// kept so the gpu_budget infeasibility is visible.
			if free && (n > budget || n < minGPUs) {
				return
			}
			tops = append(tops, p)
		}
		for _, backend := range e.Doc.Engine.Backends {
			if mode == input.ModeAggregated {
				for _, o := range e.roleOptions(input.RoleAggregated, backend) {
					for _, r := range e.replicas(o.shape, budget) {
						p := e.point(mode, backend, RoleSpec{input.RoleAggregated, withReplicas(o.worker, r)})
						p.Unsupported = e.unsupported(p, o.shape.pinned)
						add(p, o.shape.replicasSet == nil)
					}
				}
				continue
			}
			pre := e.roleOptions(input.RolePrefill, backend)
			dec := e.roleOptions(input.RoleDecode, backend)
			for _, po := range pre {
				for _, pr := range e.replicas(po.shape, budget-1) {
					for _, do := range dec {
						free := budget - pr*po.shape.shape.GPUsPerWorker()
						for _, dr := range e.replicas(do.shape, free) {
							p := e.point(mode, backend,
								RoleSpec{input.RolePrefill, withReplicas(po.worker, pr)},
								RoleSpec{input.RoleDecode, withReplicas(do.worker, dr)})
							p.Unsupported = e.unsupported(p, po.shape.pinned || do.shape.pinned)
							add(p, po.shape.replicasSet == nil && do.shape.replicasSet == nil)
						}
					}
				}
			}
		}
		if len(tops) > 0 && len(loads) > 0 {
			pts := make([]Point, 0, len(tops)*len(loads))
			for _, p := range tops {
				for _, l := range loads {
					q := p
					q.Load = l
					pts = append(pts, q)
				}
			}
			out[mode] = pts
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no viable parallel configuration: %s does not fit on %s within %d GPUs for any of %v",
			e.Model.ID, e.GPU.ID, budget, e.Doc.Engine.Backends)
	}
	return out, nil
}

func withReplicas(w perf.WorkerConfig, r int) perf.WorkerConfig {
	w.Shape.Replicas = r
	return w
}

func (e *Env) point(mode, backend string, roles ...RoleSpec) Point {
	return Point{Mode: mode, Backend: backend, Roles: roles}
}

func (e *Env) unsupported(p Point, pinned bool) string {
	if !pinned {
		return ""
	}
	for _, r := range p.Roles {
		if why := e.legal(r.Worker.Shape); why != "" {
			return r.Role + ": " + why
		}
		if r.Worker.BlockSize < 2 && p.Backend != output.BackendSGLang {
			return r.Role + ": block_size must be >= 2 for " + p.Backend
		}
	}
	return ""
}

// Select caps the space at optimizer.max_trials. The budget is split evenly
// across mode branches (remainder to the first; a branch that needs less
// passes its surplus on). A branch larger than its share is sampled the
// way AISimulate's random search starts: every topology (backend, shapes,
// scheduler) once in a seeded shuffled order, then further load points.
// It returns the points in evaluation order and whether the whole space
// was covered.
func (e *Env) Select(space map[string][]Point) ([]Point, bool) {
	var modes []string
	for _, m := range []string{input.ModeAggregated, input.ModeDisaggregated} {
		if len(space[m]) > 0 {
			modes = append(modes, m)
		}
	}
	trials := e.Doc.Optimizer.MaxTrials
	if e.Doc.Command == input.Predict {
		trials = 1 << 30
	}
	share := make([]int, len(modes))
	left := trials
	// Satisfy small branches first so their surplus flows to large ones.
	order := slices.Clone(modes)
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(space[a]), len(space[b])) })
	for i, m := range order {
		remaining := len(order) - i
		s := left / remaining
		if left%remaining > 0 {
			s++
		}
		s = min(s, len(space[m]))
		share[slices.Index(modes, m)] = s
		left -= s
	}
	var out []Point
	exhaustive := true
	for i, m := range modes {
		pts := space[m]
		if share[i] >= len(pts) {
			out = append(out, pts...)
			continue
		}
		exhaustive = false
		out = append(out, sample(pts, share[i], uint64(e.Doc.Optimizer.Seed)+uint64(i))...)
	}
	return out, exhaustive
}

func sample(pts []Point, k int, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, 0xa15e))
	groups := map[topology][]int{}
	var keys []topology
	for i := 0; i < len(pts); {
		// Enumerate emits a topology's load points one after another, sharing one Roles
		// array: such a run joins one group with a single hash of its key.
		j := i + 1
		for j < len(pts) && sameTopology(pts[j], pts[i]) {
			j++
		}
		key := pts[i].topologyKey()
		g, ok := groups[key]
		if !ok {
			keys = append(keys, key)
			g = make([]int, 0, j-i)
		}
		for ; i < j; i++ {
			g = append(g, i)
		}
		groups[key] = g
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, key := range keys {
		g := groups[key]
		rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	}
	var chosen []int
	for round := 0; len(chosen) < k; round++ {
		for _, key := range keys {
			if g := groups[key]; round < len(g) && len(chosen) < k {
				chosen = append(chosen, g[round])
			}
		}
	}
	out := make([]Point, len(chosen))
	for i, idx := range chosen {
		out[i] = pts[idx]
	}
	return out
}
