// Package replay simulates serving a request trace on a deployment: every request keeps its
// own arrival, prompt and response length, and each worker keeps a prefix cache of the trace's
// hash blocks, so a prompt whose leading blocks a worker computed recently skips their
// prefill compute. It is the per-request counterpart of perf.Simulate (which runs identical
// synthetic requests in cohorts) and uses the same pools, step model, scheduling rules and
// report.
package replay

import (
	"context"
	"slices"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/internal/eventq"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// Options say how the trace is replayed.
type Options struct {
	// Concurrency > 0 replays closed-loop: that many requests in flight, taken from the trace in
	// order, each completion issuing the next; the timestamps are ignored.
	Concurrency int
	// Sessions replays the trace's sessions turn by turn: a session's next turn is issued its
	// delay after the previous turn completes (not at its own arrival), so at most one turn of a
	// session is in flight. Only first turns are scheduled by the load: at their arrivals (open
	// loop), or Concurrency sessions at a time, each session's last completion starting the next
	// session (closed loop).
	Sessions bool
	// Speedup divides the trace's inter-arrival times (trace_timestamps; default 1).
	Speedup float64
	// MaxVirtualSeconds > 0 stops the replay at that simulated time: requests not completed by
	// then are not counted.
	MaxVirtualSeconds float64
	// PrefixCaching enables the per-worker prefix caches.
	PrefixCaching bool
	// TransferPerToken and TransferLatency price the prefill→decode KV transfer of a prompt
	// (disaggregated deployments): latency + tokens × per-token seconds.
	TransferPerToken, TransferLatency float64
}

// Result is the report plus what only a trace replay knows.
type Result struct {
	perf.Report
	// PrefixHitRatio is the share of admitted prompt tokens served from a prefix cache.
	PrefixHitRatio float64
	// OfferedRate is the arrival rate the replay offered (requests/s; 0 in closed loop).
	OfferedRate float64
	// Cutoff is set when MaxVirtualSeconds ended the replay before the trace did.
	Cutoff bool
	// MaxInFlight is the largest number of requests issued and not completed at once (at most
	// Concurrency in closed loop).
	MaxInFlight int
}

type req struct {
	src       *trace.Request
	idx       int32
	entry     *worker // the worker the request was routed to
	arrival   float64
	isl, osl  int
	prefilled int
	res       int // KV tokens reserved on the current worker
	firstTok  float64
	ttft      float64
}

// prefill is a planned prompt chunk.
type prefill struct {
	r     int32
	chunk int
}

// finish is a decoding request and the worker's decode-step count at which it completes.
type finish struct {
	at int
	r  int32
}

// worker holds its waiting and prefilling requests by index. Decoding requests are not
// walked step by step: every decode step advances all of them by one token (decodes are never
// limited by the token budget), so a worker keeps only their count, their summed KV length,
// a heap of the decode-step counts at which each completes, and the requests that joined since
// the last decode step (whose previous token is their first, not the last step's).
type worker struct {
	id          int32
	pool        *perf.Pool
	role        perf.Role
	waiting     []int32
	running     []int32 // admitted, prompt not complete
	runningSeqs int
	kvFree      int
	busy, kick  bool
	plan        []prefill
	planDecodes int
	cache       *trace.PrefixCache

	decN, decKV int
	dsteps      int
	lastDecode  float64
	finishing   []finish // min-heap on at
	joiners     []int32
}

// Event kinds; an event's Ref is the worker (step end) or the request it concerns.
const (
	evStepEnd = iota
	evArrival
	evHandoff
	evTurn // a session's next turn (ref) is due
)

type sim struct {
	d        perf.Deployment
	o        Options
	sla      perf.SLA
	reqs     []req
	order    []int32 // request indexes the load issues, in issue order (nil: trace order)
	arrivals []float64
	next     []int32 // sessions: the session's next turn of each request, -1 after the last
	started  int     // requests started (issued by the load or as a session's next turn)
	entry    []*worker
	decode   []*worker
	workers  []*worker
	rrEntry  int
	rrDecode int
	q        eventq.Queue
	now      float64
	issued   int
	done     int
	steps    int
	kicked   []*worker

	blockSize               int
	promptTokens, hitTokens float64

	ttft, tpot, e2e, itl        perf.LogHist
	sumTTFT, sumTPOT            float64
	sumE2E                      float64
	sumITL, nITL                float64
	sumPerUser                  float64
	good, outTok, inTok, goodOT int
	lastDone                    float64
	maxInFlight                 int
}

// Simulate replays t on d.
func Simulate(ctx context.Context, d perf.Deployment, t *trace.Trace, o Options, sla perf.SLA, deadline time.Time) (Result, error) {
	if o.Concurrency <= 0 && o.Speedup <= 0 {
		o.Speedup = 1
	}
	s := &sim{d: d, o: o, sla: sla, blockSize: t.BlockSize, reqs: make([]req, len(t.Requests))}
	for _, h := range []*perf.LogHist{&s.ttft, &s.tpot, &s.e2e, &s.itl} {
		h.FastLog = true
	}
	for i := range t.Requests {
		r := &t.Requests[i]
		s.reqs[i] = req{src: r, idx: int32(i), isl: r.Input, osl: r.Output}
	}
	var res Result
	if o.Sessions {
		s.chainSessions(t)
	}
	if o.Concurrency <= 0 {
		rate, err := s.orderArrivals(t)
		if err != nil {
			return res, err
		}
		res.OfferedRate = rate
	}
	s.addWorkers(t)
	cutoff, err := s.run(ctx, deadline)
	if err != nil {
		return res, err
	}
	res.Cutoff = cutoff
	res.Report = s.report()
	res.MaxInFlight = s.maxInFlight
	if s.promptTokens > 0 {
		res.PrefixHitRatio = s.hitTokens / s.promptTokens
	}
	return res, nil
}

// chainSessions links each session's turns (s.next) and starts the load with the first turns,
// in trace order.
func (s *sim) chainSessions(t *trace.Trace) {
	var firsts []int32
	s.next = make([]int32, len(t.Requests))
	last := map[string]int32{}
	for i := range t.Requests {
		s.next[i] = -1
		id := t.Requests[i].Session
		if id == "" {
			firsts = append(firsts, int32(i))
			continue
		}
		if prev, ok := last[id]; ok {
			s.next[prev] = int32(i)
		} else {
			firsts = append(firsts, int32(i))
		}
		last[id] = int32(i)
	}
	s.order = firsts
}

// orderArrivals sorts the load (every request, or each session's first turn) by its arrival at
// the trace's timestamps sped up, and returns the offered rate in requests per second.
func (s *sim) orderArrivals(t *trace.Trace) (float64, error) {
	arr, err := t.Arrivals(s.o.Speedup)
	if err != nil {
		return 0, err
	}
	s.arrivals = arr
	if !s.o.Sessions {
		s.order = make([]int32, len(arr))
		for i := range s.order {
			s.order[i] = int32(i)
		}
	}
	slices.SortStableFunc(s.order, func(a, b int32) int {
		switch {
		case arr[a] < arr[b]:
			return -1
		case arr[a] > arr[b]:
			return 1
		}
		return 0
	})
	if n := len(s.order); n > 1 {
		if span := arr[s.order[n-1]] - arr[s.order[0]]; span > 0 {
			// Requests per second: a session's turns count as its requests.
			return float64(n-1) / span * float64(len(arr)) / float64(n), nil
		}
	}
	return 0, nil
}

// addWorkers creates the deployment's workers, each prefilling one with its prefix cache.
func (s *sim) addWorkers(t *trace.Trace) {
	mk := func(p *perf.Pool, r perf.Role) []*worker {
		var ws []*worker
		for i := 0; i < p.Replicas; i++ {
			wk := &worker{id: int32(len(s.workers)), pool: p, role: r, kvFree: p.KVTokens}
			if s.o.PrefixCaching && r.Prefills() {
				wk.cache = trace.NewPrefixCache(p.KVTokens / t.BlockSize)
			}
			ws = append(ws, wk)
			s.workers = append(s.workers, wk)
		}
		return ws
	}
	if s.d.Agg != nil {
		s.entry = mk(s.d.Agg, perf.RoleAgg)
	} else {
		s.entry = mk(s.d.Prefill, perf.RolePrefill)
		s.decode = mk(s.d.Decode, perf.RoleDecode)
	}
}

// run processes events until every request is done; cutoff reports a stop at
// Options.MaxVirtualSeconds.
func (s *sim) run(ctx context.Context, deadline time.Time) (cutoff bool, err error) {
	total := len(s.reqs)
	if s.o.Concurrency > 0 {
		for s.issued < min(s.o.Concurrency, s.loadUnits()) {
			s.issue()
		}
	} else {
		s.q.Push(s.arrivals[s.order[0]], evArrival, 0)
	}
	s.startKicked()
	for n := 0; s.done < total; n++ {
		if s.q.Len() == 0 {
			return false, perf.ErrStalled
		}
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				return false, perf.ErrDeadline
			}
		}
		e := s.q.Pop()
		if s.o.MaxVirtualSeconds > 0 && e.T > s.o.MaxVirtualSeconds {
			return true, nil
		}
		s.now = e.T
		switch e.Kind {
		case evStepEnd:
			w := s.workers[e.Ref]
			s.finishStep(w)
			s.fastForward(w)
		case evArrival:
			s.issue()
			if s.issued < s.loadUnits() {
				s.q.Push(s.arrivals[s.order[s.issued]], evArrival, 0)
			}
		case evTurn:
			s.start(e.Ref)
		case evHandoff:
			s.handoff(e.Ref)
		}
		if s.q.Len() == 0 || s.q.Next() > s.now {
			s.startKicked()
		}
	}
	return false, nil
}

// handoff delivers request i's KV to the decode pool: its first token becomes visible.
func (s *sim) handoff(i int32) {
	r := &s.reqs[i]
	r.ttft = s.now - r.arrival
	r.firstTok = s.now
	s.firstToken(r)
	if r.osl == 1 {
		s.complete(r)
		return
	}
	wk := s.decode[s.rrDecode%len(s.decode)]
	s.rrDecode++
	wk.waiting = append(wk.waiting, i)
	s.kick(wk)
}

// loadUnits is the number of requests the load issues: every request, or each session's first.
func (s *sim) loadUnits() int {
	if s.order != nil {
		return len(s.order)
	}
	return len(s.reqs)
}

// issue starts the next request the load issues now (its arrival).
func (s *sim) issue() {
	i := int32(s.issued)
	if s.order != nil {
		i = s.order[i]
	}
	s.issued++
	s.start(i)
}

// start starts request i now, routed round-robin.
func (s *sim) start(i int32) {
	s.started++
	s.maxInFlight = max(s.maxInFlight, s.started-s.done)
	s.reqs[i].arrival = s.now
	wk := s.entry[s.rrEntry%len(s.entry)]
	s.rrEntry++
	s.reqs[i].entry = wk
	wk.waiting = append(wk.waiting, i)
	s.kick(wk)
}

func (s *sim) kick(w *worker) {
	if !w.busy && !w.kick {
		w.kick = true
		s.kicked = append(s.kicked, w)
	}
}

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

// reserve is the KV a request holds on w: its final footprint (no preemption), the prompt
// only on a prefill worker, in whole blocks. Cached prefix blocks are not shared between
// running requests in this accounting.
func reserve(w *worker, r *req) int {
	return w.pool.Reserve(w.role, r.isl, r.osl)
}

// admit takes the head of the waiting queue when a sequence slot and its KV are free (first
// come, first served: a head that does not fit blocks the queue) and returns its index, or -1.
// On an entry worker the prompt's cached prefix is looked up: those tokens need no prefill
// compute.
func (s *sim) admit(w *worker) int32 {
	if len(w.waiting) == 0 {
		return -1
	}
	i := w.waiting[0]
	r := &s.reqs[i]
	res := reserve(w, r)
	if !w.pool.CanAdmit(w.runningSeqs, w.kvFree, res) {
		return -1
	}
	w.waiting = w.waiting[1:]
	w.kvFree -= res
	w.runningSeqs++
	r.res = res
	if w.role == perf.RoleDecode {
		s.join(w, i)
		return i
	}
	w.running = append(w.running, i)
	s.promptTokens += float64(r.isl)
	if w.cache != nil {
		hit := w.cache.Match(r.src.HashIDs) * s.blockSize
		// At least the last prompt token is computed (it produces the first token).
		r.prefilled = min(hit, r.isl-1)
		s.hitTokens += float64(r.prefilled)
	}
	return i
}

// join adds a request that has its first token to w's decoding requests.
func (s *sim) join(w *worker, i int32) {
	r := &s.reqs[i]
	w.decN++
	w.decKV += r.isl + 1
	w.joiners = append(w.joiners, i)
	w.pushFinish(finish{at: w.dsteps + r.osl - 1, r: i})
}

// prefillPending reports whether a prompt chunk could run now: an admitted request's prompt is
// not complete, or the head of the queue can be admitted.
func (s *sim) prefillPending(w *worker) bool {
	return len(w.running) > 0 || len(w.waiting) > 0 && w.pool.CanAdmit(w.runningSeqs, w.kvFree, reserve(w, &s.reqs[w.waiting[0]]))
}

// startStep builds the next batch as perf.Simulate does: every decoding request, then prompt
// chunks of admitted requests, then admissions, within max_batched_tokens and max_sequences.
func (s *sim) startStep(w *worker) {
	w.plan = w.plan[:0]
	w.planDecodes = 0
	if w.role.AdmitsFirst() {
		for s.admit(w) >= 0 {
		}
	}
	if w.pool.PrefillOnly(w.role, w.runningSeqs, s.prefillPending(w)) {
		// Prefill-only step: the decodes wait.
		s.planPrefills(w, w.pool.PrefillBudget(0))
		s.launch(w)
		return
	}
	if w.role.Decodes() {
		w.planDecodes = w.decN
	}
	if w.role.Prefills() {
		s.planPrefills(w, w.pool.PrefillBudget(w.planDecodes))
	}
	s.launch(w)
}

func (s *sim) planPrefills(w *worker, budget int) {
	for _, i := range w.running {
		if budget <= 0 {
			return
		}
		r := &s.reqs[i]
		c := min(r.isl-r.prefilled, budget)
		w.plan = append(w.plan, prefill{r: i, chunk: c})
		budget -= c
	}
	for budget > 0 {
		i := s.admit(w)
		if i < 0 {
			return
		}
		r := &s.reqs[i]
		c := min(r.isl-r.prefilled, budget)
		w.plan = append(w.plan, prefill{r: i, chunk: c})
		budget -= c
	}
}

func (s *sim) launch(w *worker) {
	if len(w.plan) == 0 && w.planDecodes == 0 {
		return
	}
	b := perf.Batch{OutputRows: float64(w.planDecodes)}
	if w.planDecodes > 0 {
		b.DecodeSeqs, b.DecodeKV = float64(w.decN), float64(w.decKV)
	}
	for _, it := range w.plan {
		r := &s.reqs[it.r]
		ch, past := float64(it.chunk), float64(r.prefilled)
		b.PrefillTokens += ch
		b.PrefillPast += past
		b.PrefillAttn += ch * (past + ch/2)
		if r.prefilled+it.chunk == r.isl {
			b.OutputRows++
		}
	}
	w.busy = true
	s.steps++
	s.q.Push(s.now+w.pool.Step.Time(b), evStepEnd, w.id)
}

func (s *sim) finishStep(w *worker) {
	w.busy = false
	t := s.now
	if w.planDecodes > 0 {
		// Every decoding request produced a token: those that joined since the last decode
		// step after their first token, the others after the last step's.
		for _, i := range w.joiners {
			s.flushGap(t-s.reqs[i].firstTok, 1)
		}
		s.flushGap(t-w.lastDecode, float64(w.decN-len(w.joiners)))
		w.joiners = w.joiners[:0]
		w.lastDecode = t
		w.dsteps++
		w.decKV += w.decN
		for len(w.finishing) > 0 && w.finishing[0].at <= w.dsteps {
			i := w.popFinish().r
			r := &s.reqs[i]
			w.decN--
			w.decKV -= r.isl + r.osl
			w.kvFree += r.res
			w.runningSeqs--
			s.complete(r)
		}
	}
	kept := w.running[:0]
	for _, it := range w.plan {
		r := &s.reqs[it.r]
		r.prefilled += it.chunk
		if r.prefilled < r.isl {
			continue
		}
		if w.cache != nil {
			w.cache.Insert(r.src.HashIDs)
		}
		r.firstTok = t
		if w.role == perf.RolePrefill {
			// The prompt's KV leaves the prefill worker for a decode worker.
			w.kvFree += r.res
			w.runningSeqs--
			s.q.Push(t+s.o.TransferLatency+float64(r.isl)*s.o.TransferPerToken, evHandoff, it.r)
			continue
		}
		r.ttft = t - r.arrival
		s.firstToken(r)
		if r.osl == 1 {
			w.kvFree += r.res
			w.runningSeqs--
			s.complete(r)
			continue
		}
		s.join(w, it.r)
	}
	// Keep the requests whose prompt is not complete, in order.
	for _, i := range w.running {
		if r := &s.reqs[i]; r.prefilled < r.isl {
			kept = append(kept, i)
		}
	}
	w.running = kept
	s.kick(w)
}

// fastForward runs w's decode-only steps that end before every pending event directly, as the
// event loop would (start at now, end at now + step time, finish), without the event heap:
// most steps of a replay are such steps. It stops when anything else becomes runnable (another
// worker kicked, a request waiting or prefilling on w) or the next step would not be the
// earliest event.
func (s *sim) fastForward(w *worker) {
	for len(s.kicked) == 1 && s.kicked[0] == w && !w.busy && len(w.waiting) == 0 && len(w.running) == 0 &&
		w.decN > 0 && w.role.Decodes() {
		b := perf.Batch{DecodeSeqs: float64(w.decN), DecodeKV: float64(w.decKV), OutputRows: float64(w.decN)}
		end := s.now + w.pool.Step.Time(b)
		if (s.q.Len() > 0 && end >= s.q.Next()) || (s.o.MaxVirtualSeconds > 0 && end > s.o.MaxVirtualSeconds) {
			return
		}
		s.now = end
		s.steps++
		w.plan = w.plan[:0]
		w.planDecodes = w.decN
		s.finishStep(w)
	}
}

func (w *worker) pushFinish(f finish) {
	w.finishing = append(w.finishing, f)
	h := w.finishing
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (w *worker) popFinish() finish {
	h := w.finishing
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].at < h[m].at {
			m = l
		}
		if r < n && h[r].at < h[m].at {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	w.finishing = h
	return top
}

func (s *sim) flushGap(gap, w float64) {
	if w == 0 {
		return
	}
	s.itl.Add(gap*1e3, w)
	s.sumITL += gap * w
	s.nITL += w
}

func (s *sim) complete(r *req) {
	t := s.now
	e2e := t - r.arrival
	s.e2e.Add(e2e*1e3, 1)
	s.sumE2E += e2e
	tpot := 0.0
	if r.osl > 1 {
		tpot = (t - r.firstTok) / float64(r.osl-1)
		s.tpot.Add(tpot*1e3, 1)
		s.sumTPOT += tpot
		if tpot > 0 {
			s.sumPerUser += 1 / tpot
		}
	}
	ok := (s.sla.TTFTms == 0 || r.ttft*1e3 <= s.sla.TTFTms) &&
		(s.sla.ITLms == 0 || r.osl == 1 || tpot*1e3 <= s.sla.ITLms) &&
		(s.sla.E2Ems == 0 || e2e*1e3 <= s.sla.E2Ems)
	if ok {
		s.good++
		s.goodOT += r.osl
	}
	s.outTok += r.osl
	s.inTok += r.isl
	s.done++
	s.lastDone = t
	if s.next != nil {
		if n := s.next[r.idx]; n >= 0 {
			if w := r.entry; w.role == perf.RoleAgg && w.cache != nil {
				// The worker keeps the response's complete blocks as well (vLLM and SGLang cache
				// generated tokens too): the next turn's prompt starts with this prompt and response.
				ids := s.reqs[n].src.HashIDs
				w.cache.Insert(ids[:min(len(ids), (r.isl+r.osl)/s.blockSize)])
			}
			s.q.Push(t+s.reqs[n].src.DelayMs/1e3, evTurn, n)
			return
		}
	}
	if s.o.Concurrency > 0 && s.issued < s.loadUnits() {
		s.issue()
	}
}

func (s *sim) report() perf.Report {
	dur := s.lastDone
	r := perf.Report{
		Requests: s.started, Completed: s.done, OutputTokens: s.outTok, InputTokens: s.inTok,
		DurationMs: dur * 1e3, TTFTSamples: int(s.ttft.Total()), TPOTSamples: int(s.tpot.Total()), GoodCompleted: s.good,
		ForwardSteps: s.steps,
	}
	if dur > 0 {
		r.RequestThroughput = float64(s.done) / dur
		r.OutputThroughput = float64(s.outTok) / dur
		r.GoodputRequests = float64(s.good) / dur
		r.GoodputOutput = float64(s.goodOT) / dur
	}
	if n := s.ttft.Total(); n > 0 {
		r.TTFT = s.ttft.Stats(s.sumTTFT * 1e3 / n)
	}
	if n := s.e2e.Total(); n > 0 {
		r.E2E = s.e2e.Stats(s.sumE2E * 1e3 / n)
	}
	if n := s.tpot.Total(); n > 0 {
		r.TPOT = s.tpot.Stats(s.sumTPOT * 1e3 / n)
		r.PerUserThroughput = s.sumPerUser / n
	}
	if s.nITL > 0 {
		r.ITL = s.itl.Stats(s.sumITL * 1e3 / s.nITL)
	}
	return r
}

// firstToken records a request's TTFT.
func (s *sim) firstToken(r *req) {
	s.ttft.Add(r.ttft*1e3, 1)
	s.sumTTFT += r.ttft
}
