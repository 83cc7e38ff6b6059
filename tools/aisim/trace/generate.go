package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// GenerateOptions shape a synthetic mooncake trace.
type GenerateOptions struct {
	Seed     uint64
	Requests int
	// Rate is the mean Poisson arrival rate, requests per second.
	Rate float64
	// PrefixGroups is the number of distinct shared prefixes (system prompts, documents); each
	// request starts with one of them, chosen uniformly. 0: every prompt is unique.
	PrefixGroups int
	// PrefixTokens is the length of a shared prefix (rounded down to whole blocks).
	PrefixTokens int
	// InputTokens and OutputTokens are the mean prompt length (prefix included) and response
	// length; each request draws uniformly within ±50% of the mean (prompts never shorter than
	// the prefix plus one token).
	InputTokens, OutputTokens int
	BlockSize                 int
}

// DefaultGenerateOptions are the CLI's defaults.
var DefaultGenerateOptions = GenerateOptions{Seed: 1, Requests: 1000, Rate: 4, PrefixGroups: 8, PrefixTokens: 2048,
	InputTokens: 3072, OutputTokens: 256, BlockSize: DefaultBlockSize}

// Check validates the options.
func (o GenerateOptions) Check() error {
	switch {
	case o.Requests < 1:
		return fmt.Errorf("--requests must be >= 1")
	case o.Rate <= 0 || math.IsInf(o.Rate, 0) || math.IsNaN(o.Rate):
		return fmt.Errorf("--rate must be > 0")
	case o.PrefixGroups < 0:
		return fmt.Errorf("--prefix-groups must be >= 0")
	case o.PrefixTokens < 0:
		return fmt.Errorf("--prefix-tokens must be >= 0")
	case o.InputTokens < 1 || o.OutputTokens < 1:
		return fmt.Errorf("--input-tokens and --output-tokens must be >= 1")
	case o.BlockSize < 1:
		return fmt.Errorf("--block-size must be >= 1")
	}
	return nil
}

// Generate writes a seeded synthetic mooncake trace: Poisson arrivals (integer milliseconds),
// prompts made of a group's shared prefix blocks followed by unique blocks, uniform lengths
// around the means. The same options always give the same bytes.
func Generate(w io.Writer, o GenerateOptions) error {
	if err := o.Check(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7ace))
	bw := bufio.NewWriter(w)
	prefixBlocks := 0
	if o.PrefixGroups > 0 {
		prefixBlocks = o.PrefixTokens / o.BlockSize
	}
	// Group g's prefix blocks have ids g*prefixBlocks .. (g+1)*prefixBlocks-1; unique blocks
	// are numbered after every group's.
	next := int64(o.PrefixGroups * prefixBlocks)
	spread := func(mean int) int { return max(1, int(math.Round(float64(mean)*(0.5+rng.Float64())))) }
	t := 0.0
	buf := make([]byte, 0, 4096)
	for i := 0; i < o.Requests; i++ {
		if i > 0 {
			t += rng.ExpFloat64() / o.Rate * 1e3
		}
		input, output := spread(o.InputTokens), spread(o.OutputTokens)
		shared := 0
		var g int
		if o.PrefixGroups > 0 {
			g = rng.IntN(o.PrefixGroups)
			shared = prefixBlocks
			input = max(input, shared*o.BlockSize+1)
		}
		blocks := (input + o.BlockSize - 1) / o.BlockSize
		buf = buf[:0]
		buf = append(buf, `{"timestamp":`...)
		buf = strconv.AppendInt(buf, int64(math.Round(t)), 10)
		buf = append(buf, `,"input_length":`...)
		buf = strconv.AppendInt(buf, int64(input), 10)
		buf = append(buf, `,"output_length":`...)
		buf = strconv.AppendInt(buf, int64(output), 10)
		buf = append(buf, `,"hash_ids":[`...)
		for b := 0; b < blocks; b++ {
			if b > 0 {
				buf = append(buf, ',')
			}
			var id int64
			if b < shared {
				id = int64(g*prefixBlocks + b)
			} else {
				id = next
				next++
			}
			buf = strconv.AppendInt(buf, id, 10)
		}
		buf = append(buf, "]}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
