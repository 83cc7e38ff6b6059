package eventq

import (
	"math/rand/v2"
	"testing"
)

func TestOrder(t *testing.T) {
	var q Queue
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		q.Push(float64(rng.IntN(50)), 0, int32(i))
		if i%3 == 0 {
			q.Pop()
		}
	}
	last := Event{T: -1}
	for q.Len() > 0 {
		e := q.Pop()
		if e.T < last.T || e.T == last.T && e.seq < last.seq {
			t.Fatalf("%+v popped after %+v", e, last)
		}
		last = e
	}
}
