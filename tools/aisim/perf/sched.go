package perf

import "math"

// The scheduling rules below are shared by both simulators: Simulate (cohorts of identical
// synthetic requests) and replay.Simulate (individual trace requests). They hold the
// decisions; each simulator keeps its own bookkeeping of what is queued and running.

// Role is what a worker does with the requests it serves.
type Role int

const (
	RoleAgg     Role = iota // prompt and response
	RolePrefill             // the prompt, then hands the request to a decode worker
	RoleDecode              // the response of a request whose prompt a prefill worker computed
)

// Decodes reports whether the role's steps carry decode rows.
func (r Role) Decodes() bool { return r != RolePrefill }

// Prefills reports whether the role's steps carry prompt chunks.
func (r Role) Prefills() bool { return r != RoleDecode }

// AdmitsFirst reports whether the role admits every waiting request that fits before planning
// a step: a decode worker's admissions only add decode rows, which the token budget does not
// limit.
func (r Role) AdmitsFirst() bool { return r == RoleDecode }

// Reserve is the KV, in tokens, that a request with isl prompt and osl response tokens holds on
// a worker of p with role r from admission on: its final footprint (no preemption, like
// TRT-LLM's GUARANTEED_NO_EVICT policy), only the prompt on a prefill worker, in whole blocks.
func (p *Pool) Reserve(r Role, isl, osl int) int {
	tokens := isl + osl
	if r == RolePrefill {
		tokens = isl
	}
	b := p.BlockSize
	return (tokens + b - 1) / b * b
}

// CanAdmit reports whether a worker with runningSeqs admitted requests and kvFree free KV
// tokens has a sequence slot and the KV for one more request reserving res tokens.
func (p *Pool) CanAdmit(runningSeqs, kvFree, res int) bool {
	return runningSeqs < p.MaxSeqs && kvFree >= res
}

// Admissible is CanAdmit as a count: how many more requests reserving res tokens each the
// worker has slots and KV for (res > 0).
func (p *Pool) Admissible(runningSeqs, kvFree, res int) int {
	return min(p.MaxSeqs-runningSeqs, kvFree/res)
}

// PrefillOnly reports whether the next step of a worker with role r runs prompt chunks alone,
// pausing its decodes: in the prefill-first regime (PrefillFirstUpTo) while a prompt can make
// progress (prefillPending: a running request has prompt tokens left or a waiting one can be
// admitted) and at most PrefillFirstUpTo requests are running on the worker; the queue does not
// count. Only aggregated workers have decodes to pause.
func (p *Pool) PrefillOnly(r Role, runningSeqs int, prefillPending bool) bool {
	pfu := p.PrefillFirstUpTo
	return r == RoleAgg && pfu > 0 && prefillPending && (pfu == math.MaxInt || runningSeqs <= pfu)
}

// PrefillBudget is the step's token budget left for prompt chunks once decodeSeqs decoding
// requests have taken one token each (decodes are planned first and never limited by it).
func (p *Pool) PrefillBudget(decodeSeqs int) int {
	return p.MaxTokens - decodeSeqs
}
