// Package eventq is the event queue of both aisim simulators (perf's cohort simulation and
// replay's per-request replay): a binary min-heap on (time, sequence), so that events due at
// the same time run in the order they were pushed.
package eventq

// Event holds no pointers: the heap moves events on every push and pop, and pointer-free
// elements need no GC write barriers and no scanning. Kind and Ref are the simulator's (event
// type, and the worker or request it concerns).
type Event struct {
	T    float64
	seq  int
	Kind int32
	Ref  int32
}

// Queue is typed rather than built on container/heap, which would box every event in an
// interface.
type Queue struct {
	h   []Event
	seq int
}

// Len is the number of pending events.
func (q *Queue) Len() int { return len(q.h) }

// Next is the time of the earliest pending event; the queue must not be empty.
func (q *Queue) Next() float64 { return q.h[0].T }

// less works on the slice rather than the Queue so that the loops keep it in registers.
func less(h []Event, i, j int) bool {
	if h[i].T != h[j].T {
		return h[i].T < h[j].T
	}
	return h[i].seq < h[j].seq
}

// Push adds an event at time t; among events at the same time it pops after those pushed
// before it.
func (q *Queue) Push(t float64, kind, ref int32) {
	q.seq++
	q.h = append(q.h, Event{T: t, seq: q.seq, Kind: kind, Ref: ref})
	h := q.h
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(h, i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// Pop removes and returns the earliest event; the queue must not be empty.
func (q *Queue) Pop() Event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	q.h = h
	if n > 0 {
		// Bottom-up: move the hole at the root down along the smaller children to a leaf (one
		// comparison per level), then sift the former last element up from there. It usually
		// belongs near the bottom, so this takes about half the comparisons of a sift-down.
		i := 0
		for {
			l := 2*i + 1
			if l >= n {
				break
			}
			if r := l + 1; r < n && less(h, r, l) {
				l = r
			}
			h[i] = h[l]
			i = l
		}
		h[i] = last
		for i > 0 {
			p := (i - 1) / 2
			if !less(h, i, p) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	return top
}
