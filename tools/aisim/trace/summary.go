package trace

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// Dist is a token-length distribution.
type Dist struct {
	Mean float64 `json:"mean"`
	Min  int     `json:"min"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
}

// Summary is what a user wants to know about a trace before replaying it.
type Summary struct {
	Path      string  `json:"path,omitempty"`
	Format    string  `json:"format,omitempty"`
	Requests  int     `json:"requests"`
	Sessions  int     `json:"sessions,omitempty"`
	DurationS float64 `json:"duration_s"`
	// RateRPS is the offered request rate at speedup 1 (requests after the first / duration).
	RateRPS   float64 `json:"rate_rps"`
	BlockSize int     `json:"block_size"`
	ISL       Dist    `json:"input_tokens"`
	OSL       Dist    `json:"output_tokens"`
	// PrefixReuseRatio is the share of prompt blocks whose hash id appeared in an earlier
	// request: the prefix-cache hit ratio of one worker with an unbounded cache.
	PrefixReuseRatio float64 `json:"prefix_reuse_ratio"`
	UniqueBlocks     int     `json:"unique_blocks"`
}

// Summarize computes a trace's summary.
func Summarize(t *Trace) Summary {
	s := Summary{Path: t.Path, Format: t.Format, Requests: len(t.Requests), BlockSize: t.BlockSize}
	isl := make([]int, len(t.Requests))
	osl := make([]int, len(t.Requests))
	seen := map[int64]struct{}{}
	sessions := map[string]struct{}{}
	blocks, reused := 0, 0
	for i, r := range t.Requests {
		isl[i], osl[i] = r.Input, r.Output
		for _, h := range r.HashIDs {
			blocks++
			if _, ok := seen[h]; ok {
				reused++
			} else {
				seen[h] = struct{}{}
			}
		}
		if r.Session != "" {
			sessions[r.Session] = struct{}{}
		}
	}
	s.Sessions = len(sessions)
	s.ISL, s.OSL = dist(isl), dist(osl)
	s.UniqueBlocks = len(seen)
	if blocks > 0 {
		s.PrefixReuseRatio = float64(reused) / float64(blocks)
	}
	if arr, err := t.Arrivals(1); err == nil && len(arr) > 0 {
		s.DurationS = slices.Max(arr)
	}
	s.RateRPS = t.Rate()
	return s
}

func dist(v []int) Dist {
	slices.Sort(v)
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	q := func(p float64) int { return v[min(len(v)-1, int(math.Ceil(p*float64(len(v))))-1)] }
	return Dist{Mean: sum / float64(len(v)), Min: v[0], P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: v[len(v)-1]}
}

// Print writes the summary as a table.
func (s Summary) Print(w io.Writer) {
	if s.Path != "" {
		fmt.Fprintf(w, "trace: %s (%s, block_size %d)\n", s.Path, s.Format, s.BlockSize)
	}
	fmt.Fprintf(w, "requests: %d", s.Requests)
	if s.Sessions > 0 {
		fmt.Fprintf(w, " in %d sessions", s.Sessions)
	}
	fmt.Fprintf(w, "   duration: %.1f s   offered rate: %.3f req/s (at speedup 1)\n", s.DurationS, s.RateRPS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "tokens\tmean\tmin\tp50\tp90\tp99\tmax")
	for _, row := range []struct {
		name string
		d    Dist
	}{{"input (ISL)", s.ISL}, {"output (OSL)", s.OSL}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%d\t%d\t%d\n", row.name, row.d.Mean, row.d.Min, row.d.P50, row.d.P90, row.d.P99, row.d.Max)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "prefix reuse: %.1f%% of %d-token prompt blocks were seen in an earlier request (%d unique blocks)\n",
		100*s.PrefixReuseRatio, s.BlockSize, s.UniqueBlocks)
}
