package input

import "github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"

// A worker of the engine section: its parallelism (presets and knobs), startup and timing.

func defaultWorker(cmd Command) *Worker {
	w := &Worker{PrefixCaching: true, Parallelism: Parallelism{Preset: PresetDefault}, StartupSeconds: -1}
	if cmd == Predict {
		w.Parallelism = Parallelism{Preset: PresetNone, Knobs: map[string][]int{}}
		for _, k := range KnobNames {
			w.Parallelism.Knobs[k] = []int{1}
		}
	}
	return w
}

func decodeWorker(cmd Command, path string, x *document.Value) (*Worker, error) {
	wo, err := newObject(path, x, []string{"parallelism", "scheduler", "kv_cache", "timing", "startup_seconds", "hardware"},
		[]string{"context_length"})
	if err != nil {
		return nil, err
	}
	w := defaultWorker(cmd)
	if isDomain(wo.get("hardware")) {
		return nil, errf(wo.p("hardware"), "must be a concrete hardware id (domains are not allowed here)")
	}
	if w.Hardware, err = wo.str("hardware", ""); err != nil {
		return nil, err
	}
	if w.Hardware == "auto" {
		return nil, errf(wo.p("hardware"), "must be a concrete hardware id, not auto")
	}
	if w.StartupSeconds, err = decodeStartup(wo); err != nil {
		return nil, err
	}
	if wo.has("timing") {
		if w.FixedTiming, err = decodeTiming(wo.p("timing"), wo.get("timing")); err != nil {
			return nil, err
		}
	}
	if wo.has("parallelism") {
		if w.Parallelism, err = decodeParallelism(cmd, wo.p("parallelism"), wo.get("parallelism")); err != nil {
			return nil, err
		}
	}
	if wo.has("scheduler") {
		so, err := newObject(wo.p("scheduler"), wo.get("scheduler"),
			[]string{"max_batched_tokens", "max_sequences", "prefill_schedule_interval", "prefill_decode_interval"}, nil)
		if err != nil {
			return nil, err
		}
		// The backends' prefill cadences at their defaults (every pass may admit prefill, no
		// blocked rounds) are how aisim schedules; other values are not modelled.
		if err := so.defaultOnly("prefill_schedule_interval", 1); err != nil {
			return nil, err
		}
		if err := so.defaultOnly("prefill_decode_interval", 0); err != nil {
			return nil, err
		}
		spec := domainSpec{isInt: true, allowRange: true}
		if d, ok, err := so.domain(cmd, "max_batched_tokens", spec); err != nil {
			return nil, err
		} else if ok {
			w.MaxBatchedTokens = ints(d)
		}
		if d, ok, err := so.domain(cmd, "max_sequences", spec); err != nil {
			return nil, err
		} else if ok {
			w.MaxSequences = ints(d)
		}
	}
	if wo.has("kv_cache") {
		ko, err := newObject(wo.p("kv_cache"), wo.get("kv_cache"), []string{"block_size", "prefix_caching", "capacity", "bytes_per_token"},
			[]string{"host_offload", "g3_offload", "state_cache"})
		if err != nil {
			return nil, err
		}
		// bytes_per_token: auto is what aisim always does (the model's KV bytes per token at the
		// role's KV precision and parallelism); an explicit byte count is not modelled.
		if x := ko.get("bytes_per_token"); x != nil && !(x.Kind == document.KindString && x.Str == "auto") {
			return nil, errf(ko.p("bytes_per_token"), "explicit byte counts are %s (only auto, the model's KV bytes per token)", notSupported)
		}
		if isDomain(ko.get("block_size")) {
			return nil, errf(ko.p("block_size"), "domains here are %s", notSupported)
		}
		if w.BlockSize, err = ko.integer("block_size", 0, 1); err != nil {
			return nil, err
		}
		if w.PrefixCaching, err = ko.boolean("prefix_caching", true); err != nil {
			return nil, err
		}
		if ko.has("capacity") {
			co, err := newObject(ko.p("capacity"), ko.get("capacity"), []string{"type", "memory_fraction", "blocks", "cuda_graph_reserved_bytes"},
				[]string{"bytes"})
			if err != nil {
				return nil, err
			}
			// No memory held back for CUDA graphs is AISimulate's default and aisim's model.
			if err := co.defaultOnly("cuda_graph_reserved_bytes", 0); err != nil {
				return nil, err
			}
			typ, err := co.enum("type", "default", "default", "fixed")
			if err != nil {
				return nil, err
			}
			if typ == "default" {
				if co.has("blocks") {
					return nil, errf(co.p("blocks"), "only allowed with type: fixed")
				}
				d, ok, err := co.domain(cmd, "memory_fraction", domainSpec{minExcl: 0, maxIncl: 1, allowRange: true})
				if err != nil {
					return nil, err
				}
				if ok {
					w.MemoryFraction = d.Points()
				}
			} else {
				if co.has("memory_fraction") {
					return nil, errf(co.p("memory_fraction"), "only allowed with type: default")
				}
				if !co.has("blocks") {
					return nil, errf(co.p("blocks"), "required with type: fixed")
				}
				if w.FixedBlocks, err = co.integer("blocks", 0, 1); err != nil {
					return nil, err
				}
			}
		}
	}
	return w, nil
}

func decodeParallelism(cmd Command, path string, x *document.Value) (Parallelism, error) {
	known := append([]string{"preset"}, KnobNames...)
	po, err := newObject(path, x, known, []string{"prefill_context", "decode_context", "context"})
	if err != nil {
		return Parallelism{}, err
	}
	knobsGiven := false
	for _, k := range KnobNames {
		knobsGiven = knobsGiven || po.has(k)
	}
	p := Parallelism{Preset: PresetNone, Knobs: map[string][]int{}}
	if px := po.get("preset"); px != nil {
		if cmd == Predict {
			return p, errf(po.p("preset"), "presets are only allowed in recommend")
		}
		switch {
		case px.Kind == document.KindString && px.Str == "default":
			p.Preset = PresetDefault
		case px.Kind == document.KindBool && !px.Bool, px.Kind == document.KindMap && len(px.Keys) == 0:
			p.Preset = PresetNone
		case px.Kind == document.KindSeq:
			p.Preset = PresetCustom
			if len(px.Seq) == 0 {
				return p, errf(po.p("preset"), "a custom preset list must not be empty")
			}
			for i, e := range px.Seq {
				s, err := decodeShape(index(po.p("preset"), i), e)
				if err != nil {
					return p, err
				}
				p.Custom = append(p.Custom, s)
			}
		default:
			return p, errf(po.p("preset"), "expected default, false, {} or a list of complete mappings")
		}
		if p.Preset != PresetNone && knobsGiven {
			return p, errf(path, "a preset and independent knobs cannot be combined; set preset: false to use knobs")
		}
	} else if !knobsGiven && cmd == Recommend {
		p.Preset = PresetDefault
	}
	for _, k := range KnobNames {
		d, ok, err := po.domain(cmd, k, domainSpec{isInt: true, allowRange: true})
		if err != nil {
			return p, err
		}
		switch {
		case ok:
			p.Knobs[k] = ints(d)
		case cmd == Predict:
			p.Knobs[k] = []int{1}
		}
		if k == KnobPipeline && ok && (len(p.Knobs[k]) != 1 || p.Knobs[k][0] != 1) {
			return p, errf(po.p(k), "pipeline parallelism > 1 is %s", notSupported)
		}
	}
	return p, nil
}

func decodeShape(path string, x *document.Value) (Shape, error) {
	o, err := newObject(path, x, KnobNames, nil)
	if err != nil {
		return Shape{}, err
	}
	var s Shape
	dst := []*int{&s.Replicas, &s.Tensor, &s.Pipeline, &s.AttentionData, &s.MoETensor, &s.MoEExpert}
	for i, k := range KnobNames {
		if !o.has(k) {
			return s, errf(o.p(k), "required in a custom preset entry (entries must be complete)")
		}
		if isDomain(o.get(k)) {
			return s, errf(o.p(k), "domains are not allowed inside preset entries")
		}
		if *dst[i], err = o.integer(k, 0, 1); err != nil {
			return s, err
		}
	}
	if s.Pipeline != 1 {
		return s, errf(join(path, KnobPipeline), "pipeline parallelism > 1 is %s", notSupported)
	}
	return s, nil
}

// decodeStartup reads workers.<role>.startup_seconds, a concrete number >= 0 (-1 when absent).
// It only delays workers the Planner adds at runtime; aisim's pools are fixed, so the value is
// accepted, validated and otherwise ignored.
func decodeStartup(wo *object) (float64, error) {
	x := wo.get("startup_seconds")
	if x == nil {
		return -1, nil
	}
	if isDomain(x) {
		return 0, errf(wo.p("startup_seconds"), "must be concrete (domains are not allowed here)")
	}
	f, err := numValue(wo.p("startup_seconds"), x)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, errf(wo.p("startup_seconds"), "must be >= 0")
	}
	return f, nil
}

// decodeTiming reads workers.<role>.timing: type default (the performance model) or fixed
// (prefill_ms for a step that computes prompt tokens, decode_ms for a decode-only step).
func decodeTiming(path string, x *document.Value) (*FixedTiming, error) {
	to, err := newObject(path, x, []string{"type", "prefill_ms", "decode_ms", "forward_model", "estimation_mode", "fallback_policy"},
		append([]string{"fpm_parquet_path", "estimator_config", "systems_paths", "database_mode", "transfer_policy", "attention_backend"}, quantFields...))
	if err != nil {
		return nil, err
	}
	if err := estimatorSelection(to); err != nil {
		return nil, err
	}
	// forward_model: op_level is the default timing provider, which aisim's performance model
	// stands in for; whole-forward (fpm) profiles are not modelled.
	if err := to.defaultOnly("forward_model", "op_level"); err != nil {
		return nil, err
	}
	typ, err := to.str("type", "default")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "default":
		for _, k := range []string{"prefill_ms", "decode_ms"} {
			if to.has(k) {
				return nil, errf(to.p(k), "only allowed with type: fixed")
			}
		}
		return nil, nil
	case "polynomial":
		return nil, errf(to.p("type"), "polynomial: %s", notSupported)
	case "fixed":
		for _, k := range []string{"forward_model", "estimation_mode", "fallback_policy"} {
			if to.has(k) {
				return nil, errf(to.p(k), "only allowed with type: default")
			}
		}
	default:
		return nil, errf(to.p("type"), "must be one of [default fixed polynomial], got %q", typ)
	}
	ft := &FixedTiming{}
	for k, dst := range map[string]*float64{"prefill_ms": &ft.PrefillMs, "decode_ms": &ft.DecodeMs} {
		if !to.has(k) {
			return nil, errf(to.p(k), "required with type: fixed")
		}
		if *dst, err = to.positive(k, 0); err != nil {
			return nil, err
		}
	}
	return ft, nil
}
