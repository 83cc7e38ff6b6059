package perf

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/internal/eventq"
)

// Pool is a set of identical workers serving one role.
type Pool struct {
	Replicas int
	Step     *StepModel
	// Per-worker limits: per-rank scheduler limits × attention-DP ranks.
	MaxTokens int
	MaxSeqs   int
	// KVTokens is the worker's KV capacity in tokens (all ranks).
	KVTokens  int
	BlockSize int
	// PrefillFirstUpTo > 0 runs prompt chunks in steps of their own, pausing decodes while
	// any prompt can make progress, as long as at most that many requests are running on the
	// worker (admitted; the queue does not count, see BackendCalibration.PrefillFirstUpTo);
	// otherwise decodes and prompt chunks share steps (chunked / in-flight batching). The
	// decision is Pool.PrefillOnly.
	PrefillFirstUpTo int
}

// Deployment is what the simulator runs: one aggregated pool, or prefill and
// decode pools with a per-request KV transfer delay.
type Deployment struct {
	Agg     *Pool
	Prefill *Pool
	Decode  *Pool
	// TransferSeconds is the prefill→decode KV transfer time of one request.
	TransferSeconds float64
}

// Workload is synthetic traffic: fixed input/output lengths, a request
// count, and either closed-loop concurrency or an open-loop arrival rate.
type Workload struct {
	ISL, OSL int
	// CachedPrefix is how many leading prompt tokens hit the prefix cache of the entry worker:
	// they are attended to but not computed (at least one token always is). Their KV is still
	// reserved per request, as if the cache shared nothing (conservative).
	CachedPrefix int
	Requests     int
	Concurrency  int     // closed loop when > 0
	Rate         float64 // requests/second when Concurrency == 0
	Poisson      bool
	Seed         uint64
}

// SLA bounds (ms) for goodput; zero means unset.
type SLA struct{ TTFTms, ITLms, E2Ems float64 }

// Stats is a latency distribution in milliseconds.
type Stats struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P75  float64 `json:"p75"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Std  float64 `json:"std"`
}

// Report is the outcome of one simulated run. search.Metrics (a candidate record's metrics) and
// the prediction report of aisim's predict write it under the report keys of
// internal/aisimulate/output.
type Report struct {
	Requests          int
	Completed         int
	OutputTokens      int
	InputTokens       int
	DurationMs        float64
	RequestThroughput float64
	OutputThroughput  float64
	PerUserThroughput float64
	TTFT              Stats
	TPOT              Stats
	ITL               Stats
	E2E               Stats
	TTFTSamples       int
	TPOTSamples       int
	GoodCompleted     int
	GoodputOutput     float64
	GoodputRequests   float64
	ForwardSteps      int
}

// ErrStalled means requests could not be scheduled at all (typically one
// request does not fit in a worker's KV cache).
var ErrStalled = errors.New("simulation stalled: requests cannot be scheduled with the available KV cache")

// ErrDeadline means the wall-clock budget for the candidate ran out.
var ErrDeadline = errors.New("candidate timeout exceeded")

// cohort is a group of requests that arrived together on one worker and
// have made identical progress. Identical synthetic requests make this
// exact, and it keeps the cost per step proportional to the number of
// distinct admission steps rather than to the number of requests.
type cohort struct {
	n         int
	arrival   float64
	prefilled int
	generated int
	firstTok  float64
	lastTok   float64
	ttft      float64 // seconds, set when the first token is visible
	mark      int     // step id of the last step that planned this cohort
}

type item struct {
	c      *cohort
	chunk  int // prompt tokens computed this step (0 for decode)
	decode bool
}

type worker struct {
	id          int32 // index in sim.workers
	pool        *Pool
	role        Role
	waiting     []*cohort
	running     []*cohort
	prefilling  int // running cohorts with prompt tokens left
	runningSeqs int
	kvFree      int
	busy, kick  bool
	plan        []item
}

// Event kinds; an event's Ref is the worker's index (step end) or the handed-off cohort's slot
// in sim.inflight (handoff).
const (
	evStepEnd = iota
	evArrival
	evHandoff
)

type sim struct {
	d       Deployment
	w       Workload
	sla     SLA
	entry   []*worker
	decode  []*worker
	workers []*worker // by id
	// inflight holds the cohorts travelling from prefill to decode; free lists its unused slots.
	inflight []cohort
	free     []int32
	rrEntry  int
	rrDecode int
	q        eventq.Queue
	now      float64
	issued   int
	done     int
	rng      *rand.Rand
	kicked   []*worker

	ttft, tpot, itl, e2e     LogHist
	sumTTFT, sumTPOT, sumE2E float64
	sumITL, nITL             float64
	sumPerUser               float64
	nTPOT                    int
	good                     int
	lastDone                 float64
	steps                    int
}

// Simulate runs the workload on the deployment and reports latency and
// throughput. It stops early on ctx cancellation or when deadline passes.
func Simulate(ctx context.Context, d Deployment, w Workload, sla SLA, deadline time.Time) (Report, error) {
	s := &sim{d: d, w: w, sla: sla, rng: rand.New(rand.NewPCG(w.Seed, 0x5eed))}
	mk := func(p *Pool, r Role) []*worker {
		var ws []*worker
		for i := 0; i < p.Replicas; i++ {
			wk := &worker{id: int32(len(s.workers)), pool: p, role: r, kvFree: p.KVTokens}
			ws = append(ws, wk)
			s.workers = append(s.workers, wk)
		}
		return ws
	}
	if d.Agg != nil {
		s.entry = mk(d.Agg, RoleAgg)
	} else {
		s.entry = mk(d.Prefill, RolePrefill)
		s.decode = mk(d.Decode, RoleDecode)
	}
	if w.Concurrency > 0 {
		s.issue(min(w.Concurrency, w.Requests))
	} else {
		s.q.Push(0, evArrival, 0)
	}
	s.startKicked()
	for n := 0; s.done < w.Requests; n++ {
		if s.q.Len() == 0 {
			return Report{}, ErrStalled
		}
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				return Report{}, ErrDeadline
			}
		}
		e := s.q.Pop()
		s.now = e.T
		switch e.Kind {
		case evStepEnd:
			s.finishStep(s.workers[e.Ref])
		case evArrival:
			s.route(&cohort{n: 1, arrival: s.now})
			s.issued++
			if s.issued < w.Requests {
				s.q.Push(s.nextArrival(), evArrival, 0)
			}
		case evHandoff:
			c := new(cohort)
			*c = s.inflight[e.Ref]
			s.free = append(s.free, e.Ref)
			// The first token becomes visible once its KV reached the decode worker.
			c.ttft = s.now - c.arrival
			c.firstTok, c.lastTok = s.now, s.now
			s.recordFirstToken(c)
			if s.w.OSL == 1 {
				s.complete(c)
			} else {
				wk := s.decode[s.rrDecode%len(s.decode)]
				s.rrDecode++
				wk.waiting = append(wk.waiting, c)
				s.kick(wk)
			}
		}
		if s.q.Len() == 0 || s.q.Next() > s.now {
			s.startKicked()
		}
	}
	r := s.report()
	for _, h := range []*LogHist{&s.ttft, &s.tpot, &s.itl, &s.e2e} {
		h.Release()
	}
	return r, nil
}

// park stores a cohort in flight to the decode pool and returns its slot.
func (s *sim) park(c cohort) int32 {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		s.inflight[slot] = c
		return slot
	}
	s.inflight = append(s.inflight, c)
	return int32(len(s.inflight) - 1)
}

func (s *sim) nextArrival() float64 {
	if s.w.Poisson {
		return s.now + s.rng.ExpFloat64()/s.w.Rate
	}
	return float64(s.issued) / s.w.Rate
}

// issue starts n closed-loop requests now, split round-robin over the entry
// workers exactly as a per-request round-robin router would.
func (s *sim) issue(n int) {
	if n <= 0 {
		return
	}
	s.issued += n
	s.route(&cohort{n: n, arrival: s.now})
}

func (s *sim) route(c *cohort) {
	r := len(s.entry)
	base, extra := c.n/r, c.n%r
	for j := 0; j < r; j++ {
		cnt := base
		if (j-s.rrEntry%r+r)%r < extra {
			cnt++
		}
		if cnt == 0 {
			continue
		}
		wk := s.entry[j]
		wk.waiting = append(wk.waiting, &cohort{n: cnt, arrival: c.arrival, prefilled: min(s.w.CachedPrefix, s.w.ISL-1)})
		s.kick(wk)
	}
	s.rrEntry = (s.rrEntry + c.n) % r
}

func (s *sim) kick(w *worker) {
	if !w.busy && !w.kick {
		w.kick = true
		s.kicked = append(s.kicked, w)
	}
}

// startKicked starts a step on every kicked idle worker, in kick order. The queue is walked by
// index and then truncated, so its backing array is reused instead of reallocated by every
// kick (it was a tenth of the search's allocations).
func (s *sim) startKicked() {
	for i := 0; i < len(s.kicked); i++ {
		w := s.kicked[i]
		s.kicked[i] = nil
		w.kick = false
		if !w.busy {
			s.startStep(w)
		}
	}
	s.kicked = s.kicked[:0]
}

// reserve is the KV every request of the workload holds on w (Pool.Reserve).
func (s *sim) reserve(w *worker) int {
	return w.pool.Reserve(w.role, s.w.ISL, s.w.OSL)
}

func split(c *cohort, k int) *cohort {
	part := *c
	part.n = k
	c.n -= k
	return &part
}

// startStep builds the next batch the way vLLM's chunked-prefill scheduler
// does: all running decodes first, then prompt chunks of running requests,
// then new admissions, bounded by max_batched_tokens and max_sequences.
func (s *sim) startStep(w *worker) {
	isl := s.w.ISL
	w.plan = w.plan[:0]
	res := s.reserve(w)
	admit := func(limitByBudget bool, budget int) int {
		for len(w.waiting) > 0 {
			c := w.waiting[0]
			m := min(c.n, w.pool.Admissible(w.runningSeqs, w.kvFree, res))
			if limitByBudget {
				need := isl - c.prefilled
				m = min(m, (budget+need-1)/need)
			}
			if m <= 0 {
				return budget
			}
			var a *cohort
			if m == c.n {
				a = c
				w.waiting = w.waiting[1:]
			} else {
				a = split(c, m)
			}
			w.kvFree -= m * res
			w.runningSeqs += m
			w.running = append(w.running, a)
			if a.prefilled < isl {
				w.prefilling++
			}
			if limitByBudget {
				budget = s.planPrefill(w, a, budget)
				if budget <= 0 {
					return budget
				}
			}
		}
		return budget
	}
	if w.role.AdmitsFirst() {
		admit(false, 0)
	}
	// Decode rows are summed while they are planned, in integers: every term of the batch is an
	// integer (or a half-integer) far below 2^52, so float64 sums are exact in any order and
	// one pass over the running cohorts gives the same batch as summing the plan afterwards.
	decodeSeqs, decodeKV := 0, 0
	if w.pool.PrefillOnly(w.role, w.runningSeqs, s.prefillPending(w, res)) {
		// Prefill-only step: the decodes wait.
		s.planPrefills(w, w.pool.PrefillBudget(0), admit)
		s.launch(w, 0, 0, 0)
		return
	}
	if w.role.Decodes() {
		for _, c := range w.running {
			if c.prefilled == isl && c.generated < s.w.OSL {
				w.plan = append(w.plan, item{c: c, decode: true})
				decodeSeqs += c.n
				decodeKV += c.n * (isl + c.generated)
			}
		}
	}
	decodes := len(w.plan)
	if w.role.Prefills() {
		s.planPrefills(w, w.pool.PrefillBudget(decodeSeqs), admit)
	}
	s.launch(w, decodes, decodeSeqs, decodeKV)
}

// prefillPending reports whether a prompt chunk could run now: a running request still has
// prompt tokens left, or a waiting one can be admitted.
func (s *sim) prefillPending(w *worker, res int) bool {
	return w.prefilling > 0 || len(w.waiting) > 0 && w.pool.CanAdmit(w.runningSeqs, w.kvFree, res)
}

// planPrefills plans prompt chunks of running requests, then new admissions, within budget.
func (s *sim) planPrefills(w *worker, budget int, admit func(bool, int) int) {
	for i := 0; i < len(w.running) && budget > 0; i++ {
		if c := w.running[i]; c.prefilled < s.w.ISL && c.mark != s.steps+1 {
			budget = s.planPrefill(w, c, budget)
		}
	}
	if budget > 0 {
		admit(true, budget)
	}
}

// launch prices the planned batch and schedules the end of the step; the first decodes
// planned items are the decodes (decodeSeqs sequences holding decodeKV tokens).
func (s *sim) launch(w *worker, decodes, decodeSeqs, decodeKV int) {
	if len(w.plan) == 0 {
		return
	}
	isl := s.w.ISL
	b := Batch{DecodeSeqs: float64(decodeSeqs), DecodeKV: float64(decodeKV), OutputRows: float64(decodeSeqs)}
	for _, it := range w.plan[decodes:] {
		n := float64(it.c.n)
		ch := float64(it.chunk)
		b.PrefillTokens += n * ch
		b.PrefillPast += n * float64(it.c.prefilled)
		b.PrefillAttn += n * ch * (float64(it.c.prefilled) + ch/2)
		if it.c.prefilled+it.chunk == isl {
			b.OutputRows += n
		}
	}
	w.busy = true
	s.steps++
	s.q.Push(s.now+w.pool.Step.Time(b), evStepEnd, w.id)
}

// planPrefill schedules prompt chunks for cohort c within budget, splitting
// the cohort when only some of its requests fit (one may get a partial
// chunk). It returns the remaining budget.
func (s *sim) planPrefill(w *worker, c *cohort, budget int) int {
	rem := s.w.ISL - c.prefilled
	c.mark = s.steps + 1
	if c.n*rem <= budget {
		w.plan = append(w.plan, item{c: c, chunk: rem})
		return budget - c.n*rem
	}
	if k := budget / rem; k > 0 {
		full := split(c, k)
		full.mark = s.steps + 1
		w.running = append(w.running, full)
		w.prefilling++
		w.plan = append(w.plan, item{c: full, chunk: rem})
		budget -= k * rem
	}
	if budget > 0 {
		if c.n > 1 {
			part := split(c, 1)
			part.mark = s.steps + 1
			w.running = append(w.running, part)
			w.prefilling++
			c = part
		}
		w.plan = append(w.plan, item{c: c, chunk: budget})
	}
	return 0
}

func (s *sim) finishStep(w *worker) {
	w.busy = false
	t := s.now
	finished := false
	// gapV and gapW are flushed once after the loop (not in a deferred closure, which made them
	// escape to the heap on every step).
	gapV, gapW := -1.0, 0.0
	for _, it := range w.plan {
		c := it.c
		if it.decode {
			// Cohorts that decoded in the previous step share the same gap;
			// batch them into one histogram update.
			gap := t - c.lastTok
			if gap != gapV {
				s.flushGap(gapV, gapW)
				gapV, gapW = gap, 0
			}
			gapW += float64(c.n)
			c.generated++
			c.lastTok = t
			if c.generated >= s.w.OSL {
				c.n, finished = -c.n, true // mark for removal, complete below
			}
			continue
		}
		c.prefilled += it.chunk
		if c.prefilled < s.w.ISL {
			continue
		}
		w.prefilling--
		c.generated, c.firstTok, c.lastTok = 1, t, t
		if w.role == RolePrefill {
			// Release the prefill KV and hand the request to the decode pool.
			w.kvFree += c.n * s.reserve(w)
			w.runningSeqs -= c.n
			slot := s.park(*c)
			c.n, finished = 0, true
			s.q.Push(t+s.d.TransferSeconds, evHandoff, slot)
			continue
		}
		c.ttft = t - c.arrival
		s.recordFirstToken(c)
		if s.w.OSL == 1 {
			c.n, finished = -c.n, true
		}
	}
	if finished {
		kept := w.running[:0]
		for _, c := range w.running {
			switch {
			case c.n > 0:
				kept = append(kept, c)
			case c.n < 0:
				c.n = -c.n
				w.kvFree += c.n * s.reserve(w)
				w.runningSeqs -= c.n
				s.complete(c)
			}
		}
		for i := len(kept); i < len(w.running); i++ {
			w.running[i] = nil
		}
		w.running = kept
	}
	s.flushGap(gapV, gapW)
	s.kick(w)
}

func (s *sim) flushGap(gap, w float64) {
	if w == 0 {
		return
	}
	s.itl.Add(gap*1e3, w)
	s.sumITL += gap * w
	s.nITL += w
}

func (s *sim) recordFirstToken(c *cohort) {
	n := float64(c.n)
	s.ttft.Add(c.ttft*1e3, n)
	s.sumTTFT += c.ttft * n
}

func (s *sim) complete(c *cohort) {
	n := float64(c.n)
	t := s.now
	e2e := t - c.arrival
	s.e2e.Add(e2e*1e3, n)
	s.sumE2E += e2e * n
	tpot := 0.0
	if s.w.OSL > 1 {
		tpot = (t - c.firstTok) / float64(s.w.OSL-1)
		s.tpot.Add(tpot*1e3, n)
		s.sumTPOT += tpot * n
		s.nTPOT += c.n
		if tpot > 0 {
			s.sumPerUser += n / tpot
		}
	}
	ok := (s.sla.TTFTms == 0 || c.ttft*1e3 <= s.sla.TTFTms) &&
		(s.sla.ITLms == 0 || s.w.OSL == 1 || tpot*1e3 <= s.sla.ITLms) &&
		(s.sla.E2Ems == 0 || e2e*1e3 <= s.sla.E2Ems)
	if ok {
		s.good += c.n
	}
	s.done += c.n
	s.lastDone = t
	if s.w.Concurrency > 0 {
		s.issue(min(c.n, s.w.Requests-s.issued))
	}
}

func (s *sim) report() Report {
	n := float64(s.done)
	dur := s.lastDone
	r := Report{
		Requests: s.w.Requests, Completed: s.done, OutputTokens: s.done * s.w.OSL, InputTokens: s.done * s.w.ISL,
		DurationMs: dur * 1e3, TTFTSamples: s.done, TPOTSamples: s.nTPOT, GoodCompleted: s.good,
		ForwardSteps: s.steps,
	}
	if dur > 0 {
		r.RequestThroughput = n / dur
		r.OutputThroughput = float64(r.OutputTokens) / dur
		r.GoodputRequests = float64(s.good) / dur
		r.GoodputOutput = float64(s.good*s.w.OSL) / dur
	}
	r.TTFT = s.ttft.Stats(s.sumTTFT * 1e3 / n)
	r.E2E = s.e2e.Stats(s.sumE2E * 1e3 / n)
	if s.nTPOT > 0 {
		r.TPOT = s.tpot.Stats(s.sumTPOT * 1e3 / float64(s.nTPOT))
		r.PerUserThroughput = s.sumPerUser / float64(s.nTPOT)
	}
	if s.nITL > 0 {
		r.ITL = s.itl.Stats(s.sumITL * 1e3 / s.nITL)
	}
	return r
}
