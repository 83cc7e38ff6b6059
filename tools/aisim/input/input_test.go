package input

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// The test documents are complete: AISimulate's model (and so aisimulate.CheckInput, which Decode
// runs first for recommend) accepts each of them but for the one problem a case is about. What
// AISimulate requires of every document:
//   - a worker role for each mode of engine.mode: the recommend default domain is aggregated and
//     disaggregated (allRoles), mode aggregated (predict's default) needs workers.aggregated,
//     mode disaggregated workers.prefill and workers.decode ({} takes the defaults);
//   - with a traffic section, a source with its type (the union's tag), a load and, for
//     synthetic traffic, one stop count of the source's unit (requests or sessions);
//   - preset: false on a worker that sets independent parallelism knobs.

// allRoles is engine.workers with a worker role for each mode of the default engine.mode domain.
const allRoles = "workers: {aggregated: {}, prefill: {}, decode: {}}"

// minimal is the smallest recommend document AISimulate accepts.
const minimal = "engine: {model: m, hardware: h200_sxm, " + allRoles + "}\noptimization: {}\n"

// minimalPredict is the smallest predict document AISimulate accepts (predict's mode is aggregated).
const minimalPredict = "engine: {model: m, hardware: h200_sxm, workers: {aggregated: {}}}\n"

// engine is an engine section of a recommend document with the worker roles of the default
// engine.mode domain and fields (written "k: v, ") ahead of them.
func engine(fields string) string {
	return "engine: {model: m, hardware: h200_sxm, " + fields + allRoles + "}\n"
}

// predictEngine is the engine section of a predict document (mode aggregated) with fields.
func predictEngine(fields string) string {
	return "engine: {model: m, hardware: h200_sxm, " + fields + "workers: {aggregated: {}}}\n"
}

// The documents the operator's lowering produces must decode.
func TestDecodeOperatorDocuments(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want func(*Document) any
		exp  any
	}{
		{
			name: "full lowering with kv fraction range and strict SLA",
			doc: `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, backend: {choices: [vllm, sglang]}, workers: {aggregated: {}, prefill: {}, decode: {}}},
optimization: {target: throughput_per_gpu, strict_sla: true, constraints: {max_candidate_gpus: 8}}, optimizer: {max_trials: 320},
evaluation: {sla: {ttft_ms: 500, itl_ms: 30}}, traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128},
load: {type: kv_capacity_fraction, fraction: {range: {min: 0.1, max: 1.0}}}, stop: {requests: 1000}}}`,
			want: func(d *Document) any {
				return []any{d.Engine.Backends, d.Engine.Modes, d.Optimization, d.Optimizer.MaxTrials, d.Evaluation.SLA,
					d.Traffic.Load.Type, d.Traffic.Load.Intensity.Range, d.Traffic.Stop}
			},
			exp: []any{[]string{"vllm", "sglang"}, []string{"aggregated", "disaggregated"},
				Optimization{Target: "throughput_per_gpu", StrictSLA: true, MaxGPUs: 8}, 320, SLA{TTFTms: 500, ITLms: 30},
				"kv_capacity_fraction", &Range{Min: 0.1, Max: 1.0}, Stop{Requests: 1000}},
		},
		{
			name: "model only, optimization {} gets every default",
			doc: `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}, optimization: {},
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 1000}}}`,
			want: func(d *Document) any {
				return []any{d.Optimization, d.Optimizer, d.Engine.Backends, d.Traffic.Load.Intensity.Points()}
			},
			exp: []any{Optimization{Target: "throughput", MaxGPUs: 32},
				Optimizer{Algorithm: "bayesian", MaxTrials: 320, Parallelism: 16, CandidateTimeoutSeconds: 600, Seed: 42},
				[]string{"vllm", "sglang"}, []float64{10}},
		},
		{
			name: "trace replayed by timestamps with a virtual-time stop (lowering of workload.trace)",
			doc: minimal + `traffic: {source: {type: trace, paths: [/var/run/dgdr/trace/trace.jsonl], format: mooncake},
load: {type: trace_timestamps, speedup: 2}, stop: {max_virtual_time_seconds: 600}}`,
			want: func(d *Document) any { return d.Traffic },
			exp: Traffic{Trace: &TraceSource{Path: "/var/run/dgdr/trace/trace.jsonl", Format: "mooncake"},
				Load: Load{Type: "trace_timestamps", Intensity: Fixed(2, false), Seed: 42}, Stop: Stop{MaxVirtualSeconds: 600}},
		},
		{
			name: "trace replayed closed-loop, no stop, explicit block size",
			doc:  minimal + `traffic: {source: {type: trace, paths: [t.jsonl], block_size: 256}, load: {type: concurrency, concurrency: {choices: [8, 32]}}}`,
			want: func(d *Document) any { return d.Traffic },
			exp: Traffic{Trace: &TraceSource{Path: "t.jsonl", Format: "mooncake", BlockSize: 256, BlockSizeSet: true},
				Load: Load{Type: "concurrency", Intensity: Domain{Choices: []float64{8, 32}, Int: true}, Seed: 42}},
		},
		{
			name: "trace_timestamps without speedup replays at 1",
			doc:  minimal + `traffic: {source: {type: trace, paths: [t.jsonl]}, load: {type: trace_timestamps}}`,
			want: func(d *Document) any { return d.Traffic.Load.Intensity },
			exp:  Fixed(1, false),
		},
		{
			name: "omitted traffic is AISimulate's default",
			doc:  minimal,
			want: func(d *Document) any { return d.Traffic.Stop },
			exp:  Stop{Requests: 100},
		},
		{
			name: "poisson rate with seed",
			doc:  minimal + "traffic: {source: {type: synthetic}, load: {type: poisson, requests_per_second: 20, seed: 7}, stop: {requests_per_load_unit: 10}}",
			want: func(d *Document) any { return []any{d.Traffic.Load, d.Traffic.Stop.RequestCount(20)} },
			exp:  []any{Load{Type: "poisson", Intensity: Fixed(20, false), Seed: 7}, 200},
		},
		{
			name: "hardware auto resolves from optimization.hardware",
			doc:  "engine: {model: m, hardware: auto, " + allRoles + "}\noptimization: {hardware: b200_sxm}",
			want: func(d *Document) any { return d.Engine.Hardware },
			exp:  "b200_sxm",
		},
		{
			name: "stepped integer range expands, scheduler choices kept",
			doc: `optimization: {}
traffic: {source: {type: synthetic}, load: {concurrency: {range: {min: 4, max: 16, step: 4}}}, stop: {requests: 10}}
engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {scheduler: {max_sequences: {choices: [64, 128]}}}}}`,
			want: func(d *Document) any {
				return []any{d.Traffic.Load.Intensity.Points(), d.Engine.Workers["aggregated"].MaxSequences, d.Engine.Modes}
			},
			exp: []any{[]float64{4, 8, 12, 16}, []int{64, 128}, []string{"aggregated"}},
		},
		{
			name: "explicit parallelism knobs",
			doc:  "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {parallelism: {preset: false, tensor: 2, replicas: {choices: [1, 2]}}}}}\noptimization: {}",
			want: func(d *Document) any { return d.Engine.Workers["aggregated"].Parallelism },
			exp:  Parallelism{Preset: PresetNone, Knobs: map[string][]int{"tensor": {2}, "replicas": {1, 2}}},
		},
		{
			name: "custom preset list",
			doc: `engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {parallelism: {preset: [
  {replicas: 2, tensor: 4, pipeline: 1, attention_data: 1, moe_tensor: 1, moe_expert: 1}]}}}}
optimization: {}`,
			want: func(d *Document) any { return d.Engine.Workers["aggregated"].Parallelism },
			exp:  Parallelism{Preset: PresetCustom, Custom: []Shape{{2, 4, 1, 1, 1, 1}}, Knobs: map[string][]int{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(Recommend, []byte(tc.doc), nil)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.exp, tc.want(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		doc  string
		sets []string
		want string // "<path>: <reason>"; the path is compared, the reason only documents the case
	}{
		{"unknown top-level", Recommend, minimal + "foo: 1", nil, "foo: unknown field"},
		{"unknown nested key", Recommend, minimal + "traffic: {source: {type: synthetic}, stop: {requests: 1}, load: {type: concurrency, concurency: 2}}", nil, "traffic.load.concurency: unknown field"},
		{"float for an integer", Recommend, minimal + "traffic: {source: {type: synthetic, input_tokens: 1024.0}, load: {type: concurrency}, stop: {requests: 1}}", nil, "traffic.source.input_tokens: must be written as an integer"},
		{"string for an integer", Recommend, minimal + `traffic: {source: {type: synthetic, input_tokens: "1024"}, load: {type: concurrency}, stop: {requests: 1}}`, nil, `traffic.source.input_tokens: expected an integer, got string "1024"`},
		{"bool for an integer", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: true}}", nil, "traffic.stop.requests: expected an integer, got boolean"},
		{"two stops", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: 1, requests_per_load_unit: 2}}", nil, "traffic.stop: exactly one of requests or requests_per_load_unit is required"},
		{"missing stop", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: concurrency}}", nil, "traffic.stop: required"},
		{"trace format other than mooncake", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a], format: weka}, load: {type: trace_timestamps}}", nil, "traffic.source.format: weka: not supported by aisim"},
		{"trace with two paths", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a, b]}, load: {type: trace_timestamps}}", nil, "traffic.source.paths: exactly one path"},
		{"trace with token lengths", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a], input_tokens: 5}, load: {type: trace_timestamps}}", nil, "traffic.source.input_tokens: not allowed with type trace"},
		{"trace with a request count", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a]}, load: {type: trace_timestamps}, stop: {requests: 5}}", nil, "traffic.stop.requests: not allowed with a trace source"},
		{"trace with poisson", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a]}, load: {type: poisson, requests_per_second: 1}}", nil, "traffic.load.type: a trace source accepts only trace_timestamps or concurrency"},
		{"speedup with concurrency", Predict, minimalPredict + "traffic: {source: {type: trace, paths: [a]}, load: {type: concurrency, speedup: 2}}", nil, "traffic.load.speedup: load type concurrency does not accept this field"},
		{"trace_timestamps without a trace", Predict, minimalPredict + "traffic: {source: {type: synthetic}, load: {type: trace_timestamps}, stop: {requests: 1}}", nil, "traffic.load.type: trace_timestamps requires a trace source"},
		{"virtual time without a trace", Predict, minimalPredict + "traffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: 1, max_virtual_time_seconds: 5}}", nil, "traffic.stop.max_virtual_time_seconds: only allowed with a trace source"},
		{"session without session", Recommend, minimal + "traffic: {source: {type: synthetic-session}, load: {type: concurrency}, stop: {sessions: 1}}", nil, "traffic.source.session: required for a synthetic-session source"},
		{"session one turn", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {turns: 1}}, load: {type: concurrency}, stop: {sessions: 1}}", nil, "traffic.source.session.turns: must be >= 2"},
		{"session input_tokens", Recommend, minimal + "traffic: {source: {type: synthetic-session, input_tokens: 8, session: {}}, load: {type: concurrency}, stop: {sessions: 1}}", nil, "traffic.source.input_tokens: unknown field"},
		{"session prefix without groups", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {shared_prefix_ratio: 0.5}}, load: {type: concurrency}, stop: {sessions: 1}}", nil, "traffic.source.session.prefix_groups: must be > 0 when shared_prefix_ratio is > 0"},
		{"session ratio above 1", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {shared_prefix_ratio: 1.5, prefix_groups: 1}}, load: {type: concurrency}, stop: {sessions: 1}}", nil, "traffic.source.session.shared_prefix_ratio: must be <= 1"},
		// The rate of the other unit comes with the source's own: a poisson load without the
		// source's rate is refused for that first.
		{"session request rate", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {}}, load: {type: poisson, sessions_per_second: 2, requests_per_second: 2}, stop: {sessions: 1}}", nil, "traffic.load.requests_per_second: the open-loop rate of this source is sessions_per_second"},
		{"request source session rate", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: poisson, requests_per_second: 2, sessions_per_second: 2}, stop: {requests: 1}}", nil, "traffic.load.sessions_per_second: the open-loop rate of this source is requests_per_second"},
		{"session kv fraction", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {}}, load: {type: kv_capacity_fraction, fraction: 1}, stop: {sessions: 1}}", nil, "traffic.load.type: kv_capacity_fraction with a synthetic-session source: not supported by aisim"},
		{"session request stop", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {}}, load: {type: concurrency}, stop: {requests: 1}}", nil, "traffic.stop.requests: not allowed with a synthetic-session source (use sessions or sessions_per_load_unit)"},
		{"session two stops", Recommend, minimal + "traffic: {source: {type: synthetic-session, session: {}}, load: {type: concurrency}, stop: {sessions: 1, sessions_per_load_unit: 2}}", nil, "traffic.stop: exactly one of sessions or sessions_per_load_unit is required"},
		{"images", Recommend, "engine: {model: m, hardware: h200_sxm, workers: {encoder: {}, aggregated: {}, prefill: {}, decode: {}}}\noptimization: {}\n" +
			"traffic: {source: {type: synthetic, images: {height: 1, width: 1}}, load: {type: concurrency}, stop: {requests: 1}}", nil, "traffic.source.images: not supported by aisim"},
		{"speculation", Recommend, engine("backend: vllm, speculation: {kind: ngram, num_speculative_tokens: 1, acceptance_rates: [0.5]}, ") + "optimization: {}", nil, "engine.speculation: not supported by aisim"},
		{"afd mode", Recommend, "engine: {model: m, hardware: h200_sxm, mode: afd, afd: {phase: both, combined_with_pd: false, a_batch_size: {choices: [8, 16]}}}\noptimization: {}", nil, "engine.afd: not supported by aisim"},
		{"kv_transfer without disaggregation", Predict, predictEngine("mode: aggregated, kv_transfer: {bandwidth_gb_per_second: 1}, "), nil, "engine.kv_transfer: only allowed when engine.mode can be disaggregated"},
		{"router not a mapping", Recommend, minimal + "router: kv_router", nil, "router: expected a mapping"},
		{"router with min_gpus", Recommend, engine("") + "evaluation: {sla: {ttft_ms: 100}}\noptimization: {target: min_gpus}\n" +
			"traffic: {source: {type: synthetic}, load: {type: concurrency, concurrency: 2}, stop: {requests: 10}}\nrouter: {policy: kv_router}", nil,
			"router: target min_gpus does not support adapter sections"},
		{"unknown top-level section", Recommend, minimal + "routers: {}", nil, "routers: unknown field"},
		{"polynomial timing", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {timing: {type: polynomial}}}}\noptimization: {}", nil, "engine.workers.aggregated.timing.type: polynomial: not supported by aisim"},
		{"fixed timing without decode_ms", Predict, "engine: {model: m, hardware: h200_sxm, workers: {aggregated: {timing: {type: fixed, prefill_ms: 1}}}}", nil, "engine.workers.aggregated.timing.decode_ms: required with type: fixed"},
		{"host offload", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, backend: vllm, workers: {aggregated: {parallelism: {preset: false, attention_data: 1}, kv_cache: {host_offload: {num_host_blocks: 8}}}}}\noptimization: {}", nil, "engine.workers.aggregated.kv_cache.host_offload: not supported by aisim"},
		{"nvfp4 gemm", Predict, predictEngine("gemm_quant_mode: nvfp4, "), nil, `engine.gemm_quant_mode: "nvfp4": not supported by aisim`},
		{"int8 kv cache", Predict, predictEngine("kvcache_quant_mode: int8, "), nil, `engine.kvcache_quant_mode: "int8": not supported by aisim`},
		{"session-affine placement", Predict, predictEngine("placement: {policy: session_affinity}, "), nil, "engine.placement: not supported by aisim"},
		{"per-role precision", Predict, "engine: {model: m, hardware: h200_sxm, workers: {aggregated: {timing: {gemm_quant_mode: fp8}}}}", nil, "engine.workers.aggregated.timing.gemm_quant_mode: not supported by aisim"},
		{"per-role attention backend", Predict, "engine: {model: m, hardware: h200_sxm, workers: {aggregated: {timing: {attention_backend: flashinfer}}}}", nil, "engine.workers.aggregated.timing.attention_backend: not supported by aisim"},
		{"min_goodput_rps without min_gpus", Recommend, engine("") + "evaluation: {sla: {ttft_ms: 100}}\noptimization: {constraints: {min_goodput_rps: 1}}", nil, "optimization.constraints.min_goodput_rps: applies only to the min_gpus target"},
		{"pipeline > 1", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {parallelism: {preset: false, pipeline: 2}}}}\noptimization: {}", nil, "engine.workers.aggregated.parallelism.pipeline: pipeline parallelism > 1 is not supported by aisim"},
		{"load field of another type", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: concurrency, fraction: 0.5}, stop: {requests: 1}}", nil, "traffic.load.fraction: load type concurrency does not accept this field"},
		{"bare list is not a domain", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {concurrency: [1, 2]}, stop: {requests: 1}}", nil, "traffic.load.concurrency: a bare list is not a domain"},
		{"integer range needs step", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {concurrency: {range: {min: 1, max: 8}}}, stop: {requests: 1}}", nil, "traffic.load.concurrency.range.step: an integer linear range requires step (or scale: log)"},
		{"range min > max", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: kv_capacity_fraction, fraction: {range: {min: 0.9, max: 0.1}}}, stop: {requests: 1}}", nil, "traffic.load.fraction.range: min (0.9) must be <= max (0.1)"},
		{"log range with step", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: poisson, requests_per_second: {range: {min: 1, max: 8, step: 1, scale: log}}}, stop: {requests: 1}}", nil, "traffic.load.requests_per_second.range.step: not allowed with scale: log"},
		{"duplicate choices", Recommend, engine("backend: {choices: [vllm, vllm]}, ") + "optimization: {}", nil, `engine.backend.choices: duplicate choice "vllm"`},
		{"domain on a non-sweepable field", Recommend, minimal + "traffic: {source: {type: synthetic, input_tokens: {choices: [1, 2]}}, load: {type: concurrency}, stop: {requests: 1}}", nil, "traffic.source.input_tokens: expected an integer, got mapping"},
		{"e2e with ttft", Recommend, minimal + "evaluation: {sla: {e2e_ms: 1, ttft_ms: 1}}", nil, "evaluation.sla.e2e_ms: e2e_ms is mutually exclusive with ttft_ms and itl_ms"},
		{"strict sla without bound", Recommend, engine("") + "optimization: {strict_sla: true}", nil, "optimization.strict_sla: requires at least one evaluation.sla bound"},
		{"goodput without sla", Recommend, engine("") + "optimization: {target: goodput}", nil, "optimization.target: goodput requires at least one evaluation.sla bound"},
		{"unknown target", Recommend, engine("") + "optimization: {target: speed}", nil, "optimization.target: must be one of"},
		{"auto without optimization.hardware", Recommend, "engine: {model: m, hardware: auto, " + allRoles + "}\noptimization: {}", nil, "optimization.hardware: engine.hardware auto needs optimization.hardware"},
		{"missing optimization", Recommend, engine(""), nil, "optimization: required"},
		{"min > max gpus", Recommend, engine("") + "optimization: {constraints: {min_candidate_gpus: 9, max_candidate_gpus: 8}}", nil, "optimization.constraints.min_candidate_gpus: must be <= max_candidate_gpus (8)"},
		// AISimulate's model accepts max_trials below the number of branches; its search refuses
		// it when it starts (sweeper/search.py: "optimizer.max_trials must be at least the number
		// of active deployment branches", exit 2), counting the (mode, backend) branches it can
		// run. aisim refuses it while decoding, counting the modes of the domain.
		{"max_trials below branches", Recommend, minimal + "optimizer: {max_trials: 1}", nil, "optimizer.max_trials: must be >= the number of mode branches (2)"},
		{"role not allowed by mode", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {}, prefill: {}}}\noptimization: {}", nil, "engine.workers.prefill: role prefill is not allowed"},
		{"preset with knobs", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {parallelism: {preset: default, tensor: 2}}}}\noptimization: {}", nil, "engine.workers.aggregated.parallelism.preset: a preset and independent knobs cannot be combined"},
		{"incomplete preset entry", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {parallelism: {preset: [{tensor: 2}]}}}}\noptimization: {}", nil, "engine.workers.aggregated.parallelism.preset.0: preset entries must cover all six knobs"},
		{"min_gpus with load domain", Recommend, engine("") + "evaluation: {sla: {ttft_ms: 1}}\noptimization: {target: min_gpus}\n" +
			"traffic: {source: {type: synthetic}, load: {concurrency: {choices: [1, 2]}}, stop: {requests: 1}}", nil, "traffic.load.concurrency: target min_gpus needs a fixed concurrency"},
		{"predict rejects optimization", Predict, minimalPredict + "optimization: {}", nil, "optimization: not allowed in predict"},
		{"predict rejects domains", Predict, predictEngine("backend: {choices: [vllm]}, "), nil, "engine.backend: domains are only allowed in recommend"},
		{"predict rejects kv fraction", Predict, minimalPredict + "traffic: {source: {type: synthetic}, load: {type: kv_capacity_fraction, fraction: 0.5}, stop: {requests: 1}}", nil, "traffic.load.type: kv_capacity_fraction is recommend-only"},
		{"predict rejects auto", Predict, "engine: {model: m, hardware: auto, workers: {aggregated: {}}}", nil, "engine.hardware: auto is recommend-only"},
		{"set crossing a scalar", Recommend, minimal, []string{"engine.model.x=1"}, "--set engine.model.x: engine.model is a string, not a mapping"},
		{"set with index", Recommend, minimal, []string{"engine.0=1"}, "--set engine.0: numeric path segments"},
		{"set introduces unknown key", Recommend, minimal, []string{"engine.foo=1"}, "engine.foo: unknown field"},
		{"predict --set optimizer", Predict, minimalPredict, []string{"optimizer.seed=1"}, "--set optimizer.seed=1: optimizer is not allowed in predict"},
		{"duplicate YAML key", Recommend, minimal + "traffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: 1, requests: 2}}", nil, "traffic.stop.requests: duplicate key"},
		{"not a mapping", Recommend, "- a\n- b", nil, "the document must be a mapping, got list"},
		// AISimulate's model accepts it (it checks the disaggregated workers' context_length
		// only); aisim refuses request lengths above engine.context_length while decoding.
		{"context too small", Recommend, engine("context_length: 100, ") + "optimization: {}", nil, "traffic.source: input_tokens + output_tokens (1152) exceeds engine.context_length (100)"},
		{"block size 1 for vllm", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, backend: vllm, workers: {aggregated: {kv_cache: {block_size: 1}}}}\noptimization: {}", nil, "engine.workers.aggregated.kv_cache.block_size: must be >= 2"},
		{"memory fraction above 1", Recommend, "engine: {model: m, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {kv_cache: {capacity: {memory_fraction: 1.5}}}}}\noptimization: {}", nil, "engine.workers.aggregated.kv_cache.capacity.memory_fraction: must be <= 1"},
		{"NaN rejected", Recommend, minimal + "evaluation: {sla: {ttft_ms: .nan}}", nil, "evaluation.sla.ttft_ms: .nan is not a finite number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.cmd, []byte(tc.doc), tc.sets)
			if err == nil {
				t.Fatalf("Decode succeeded, want error %q", tc.want)
			}
			wantPath, _, _ := strings.Cut(tc.want, ": ")
			if gotPath, _, _ := strings.Cut(err.Error(), ": "); gotPath != wantPath {
				t.Errorf("error = %q, want it at %q (%q)", err.Error(), wantPath, tc.want)
			}
			var ferr *FieldError
			if !errors.As(err, &ferr) {
				t.Errorf("error %T is not a *FieldError", err)
			}
			if strings.Contains(tc.want, notSupported) && !strings.Contains(err.Error(), notSupported) {
				t.Errorf("error = %q, want it to say %q", err.Error(), notSupported)
			}
		})
	}
}

// Issue #20: precision overrides, backend_version, router/planner and min_goodput_rps decode.
func TestDecodeNewFields(t *testing.T) {
	d, err := Decode(Predict, []byte("engine: {model: m, hardware: h100_sxm, backend: trtllm, backend_version: 1.0.0rc3, "+
		"gemm_quant_mode: fp8_block, kvcache_quant_mode: fp8, fmha_quant_mode: bfloat16, comm_quant_mode: half, workers: {aggregated: {}}}\n"+
		"router: {policy: kv_router}\nplanner: {}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Precision{GEMM: QuantFP8, KVCache: QuantFP8, FMHA: QuantFloat16, Comm: QuantFloat16}
	if d.Engine.Precision != want || d.Engine.BackendVersion != "1.0.0rc3" {
		t.Errorf("precision %+v version %q", d.Engine.Precision, d.Engine.BackendVersion)
	}
	if diff := cmp.Diff([]string{"router", "planner"}, d.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	d, err = Decode(Recommend, []byte(engine("backend: {choices: [vllm, sglang]}, backend_version: {vllm: 0.12.0, sglang: 0.5.6}, ")+
		"evaluation: {sla: {ttft_ms: 100}}\noptimization: {target: min_gpus, constraints: {min_goodput_rps: 1}}\n"+
		"traffic: {source: {type: synthetic}, load: {type: poisson, requests_per_second: 2}, stop: {requests: 10}}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Engine.BackendVersion != "sglang=0.5.6,vllm=0.12.0" || d.Optimization.MinGoodputRPS != 1 {
		t.Errorf("version %q floor %v", d.Engine.BackendVersion, d.Optimization.MinGoodputRPS)
	}
}

func TestSetOverridesReplaceLeaves(t *testing.T) {
	d, err := Decode(Recommend, []byte(minimal+"traffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: 5}}"), []string{
		"traffic.stop={requests_per_load_unit: 2}",
		"optimization.constraints.max_candidate_gpus=4",
		"engine.backend={choices: [trtllm]}",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := []any{d.Traffic.Stop, d.Optimization.MaxGPUs, d.Engine.Backends}
	want := []any{Stop{RequestsPerLoadUnit: 2}, 4, []string{"trtllm"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCanonicalJSONIsStableAndTyped(t *testing.T) {
	a, _ := document.Parse([]byte("b: 1\na: {y: 1.0, x: [true, null, \"s\"]}"))
	b, _ := document.Parse([]byte("a: {x: [true, null, \"s\"], y: 1.0}\nb: 1"))
	want := `{"a":{"x":[true,null,"s"],"y":1.0},"b":1}`
	ca, _ := document.Canonical(a.JSON())
	cb, _ := document.Canonical(b.JSON())
	if diff := cmp.Diff(want, string(ca)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(ca) != string(cb) {
		t.Errorf("key order changed the canonical form")
	}
}

func TestDomainPoints(t *testing.T) {
	cases := []struct {
		name string
		d    Domain
		want []float64
	}{
		{"stepped float range", Domain{Range: &Range{Min: 0.1, Max: 0.5, Step: 0.1}}, []float64{0.1, 0.2, 0.3, 0.4, 0.5}},
		{"continuous linear", Domain{Range: &Range{Min: 0.1, Max: 1.0}}, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{"log integer dedupes", Domain{Int: true, Range: &Range{Min: 1, Max: 4, Log: true}}, []float64{1, 2, 3, 4}},
		{"degenerate", Domain{Range: &Range{Min: 2, Max: 2}}, []float64{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.d.Points()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Fuzz-ish robustness: arbitrary mutations of a valid document never panic.
func TestDecodeNeverPanics(t *testing.T) {
	base := `engine: {model: m, hardware: h200_sxm, workers: {aggregated: {parallelism: {preset: default}}, prefill: {}, decode: {}}}
optimization: {target: pareto}
traffic: {source: {type: synthetic}, load: {type: kv_capacity_fraction, fraction: {range: {min: 0.1, max: 1}}}, stop: {requests: 10}}`
	values := []string{"null", "1", "-1", "0", "1.5", "x", "[1]", "{}", "{choices: []}", "{range: {}}", "true", "{choices: [null]}"}
	paths := []string{"engine", "engine.mode", "engine.backend", "engine.workers", "engine.workers.aggregated",
		"engine.workers.aggregated.parallelism", "engine.workers.aggregated.parallelism.preset",
		"engine.workers.aggregated.parallelism.tensor", "traffic", "traffic.load", "traffic.load.fraction",
		"traffic.load.fraction.range", "traffic.stop", "optimization", "optimization.constraints", "optimizer",
		"evaluation.sla", "engine.context_length", "engine.workers.aggregated.kv_cache.capacity"}
	for _, p := range paths {
		for _, v := range values {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("panic for --set %s=%s: %v", p, v, r)
					}
				}()
				_, _ = Decode(Recommend, []byte(base), []string{p + "=" + v})
			}()
		}
	}
}

// Issue #20: workers.<role>.startup_seconds (the delay of a worker the Planner adds at runtime)
// is accepted as a concrete number >= 0 and named as ignored, since aisim never adds workers;
// a negative value or a domain is still exit 2 naming the field.
func TestDecodeStartupSeconds(t *testing.T) {
	const base = "engine: {model: m, hardware: h200_sxm, backend: vllm, workers: {aggregated: {startup_seconds: %s}}}"
	d, err := Decode(Predict, []byte(fmt.Sprintf(base, "0")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"engine.workers.aggregated.startup_seconds"}, d.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if got := d.Engine.Workers["aggregated"].StartupSeconds; got != 0 {
		t.Errorf("startup_seconds = %v, want 0", got)
	}
	d, err = Decode(Predict, []byte("engine: {model: m, hardware: h200_sxm, backend: vllm, workers: {aggregated: {}}}"), nil)
	if err != nil || len(d.Ignored) != 0 {
		t.Errorf("absent startup_seconds: err %v, ignored %v", err, d.Ignored)
	}
	if _, err := Decode(Predict, []byte(fmt.Sprintf(base, "12.5")), nil); err != nil {
		t.Errorf("12.5: %v", err)
	}
	const recommend = "engine: {model: m, hardware: h200_sxm, backend: vllm, workers: {aggregated: {startup_seconds: %s}, prefill: {}, decode: {}}}\noptimization: {}"
	// "5": AISimulate's model coerces the numeric string (startup_seconds is not strict); the
	// shared check refuses that spelling on purpose (docs/design/effective-input-validation.md, "Not
	// mirrored").
	for _, bad := range []string{"-1", `"5"`, "{choices: [0, 5]}"} {
		_, err := Decode(Recommend, []byte(fmt.Sprintf(recommend, bad)), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "engine.workers.aggregated.startup_seconds: ") {
			t.Errorf("%s: error = %v, want one naming engine.workers.aggregated.startup_seconds", bad, err)
		}
	}
}

// Issue #20: a disaggregated role may override engine.hardware with a concrete id; aggregated
// workers, auto and domains are exit 2 naming the field. kv_cache.bytes_per_token: auto (what aisim
// always computes) is accepted, an explicit byte count is refused naming the field.
func TestDecodeRoleHardwareAndBytesPerToken(t *testing.T) {
	d, err := Decode(Predict, []byte("engine: {mode: disaggregated, model: m, hardware: h200_sxm, backend: vllm, "+
		"workers: {prefill: {}, decode: {hardware: gb200, kv_cache: {bytes_per_token: auto}}}}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Engine.Workers[RoleDecode].Hardware; got != "gb200" {
		t.Errorf("decode hardware = %q", got)
	}
	if got := d.Engine.Workers[RolePrefill].Hardware; got != "" {
		t.Errorf("prefill hardware = %q, want none", got)
	}
	for _, tc := range []struct{ doc, path string }{
		{"engine: {model: m, hardware: h200_sxm, workers: {aggregated: {hardware: gb200}, prefill: {}, decode: {}}}", "engine.workers.aggregated.hardware"},
		{"engine: {mode: disaggregated, model: m, hardware: h200_sxm, workers: {prefill: {hardware: auto}, decode: {}}}", "engine.workers.prefill.hardware"},
		{"engine: {mode: disaggregated, model: m, hardware: h200_sxm, workers: {prefill: {}, decode: {hardware: {choices: [gb200, h200_sxm]}}}}", "engine.workers.decode.hardware"},
		{"engine: {model: m, hardware: h200_sxm, workers: {aggregated: {kv_cache: {bytes_per_token: 131072}}, prefill: {}, decode: {}}}", "engine.workers.aggregated.kv_cache.bytes_per_token"},
	} {
		_, err := Decode(Recommend, []byte(tc.doc+"\noptimization: {}"), nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("%s: error = %v, want one naming %s", tc.doc, err, tc.path)
		}
	}
}

// Issue #20: fields whose AISimulate default is what aisim models are accepted at that default
// (timing.forward_model: op_level, scheduler.prefill_schedule_interval: 1,
// scheduler.prefill_decode_interval: 0, capacity.cuda_graph_reserved_bytes: 0); any other value
// is exit 2 naming the field.
func TestDecodeDefaultOnlyFields(t *testing.T) {
	const base = "engine: {model: m, hardware: h200_sxm, backend: %s, workers: {aggregated: %s}}"
	for _, ok := range []string{
		"{timing: {type: default, forward_model: op_level}}",
		"{scheduler: {prefill_schedule_interval: 1, prefill_decode_interval: 0}}",
		"{kv_cache: {capacity: {type: default, cuda_graph_reserved_bytes: 0}}}",
	} {
		if _, err := Decode(Predict, []byte(fmt.Sprintf(base, "vllm", ok)), nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, tc := range []struct{ backend, worker, path string }{
		{"vllm", "{timing: {type: default, forward_model: fpm}}", "engine.workers.aggregated.timing.forward_model"},
		// AISimulate refuses a forward_model other than op_level (its default) with fixed timing;
		// forward_model: op_level with fixed timing it accepts.
		{"vllm", "{timing: {type: fixed, prefill_ms: 1, decode_ms: 1, forward_model: fpm}}", "engine.workers.aggregated.timing.forward_model"},
		{"vllm", "{scheduler: {prefill_schedule_interval: 4}}", "engine.workers.aggregated.scheduler.prefill_schedule_interval"},
		// AISimulate takes a prefill_decode_interval other than 0 only for sglang.
		{"sglang", "{scheduler: {prefill_decode_interval: 20}}", "engine.workers.aggregated.scheduler.prefill_decode_interval"},
		{"vllm", "{kv_cache: {capacity: {type: default, cuda_graph_reserved_bytes: 1024}}}", "engine.workers.aggregated.kv_cache.capacity.cuda_graph_reserved_bytes"},
	} {
		_, err := Decode(Predict, []byte(fmt.Sprintf(base, tc.backend, tc.worker)), nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("%s: error = %v, want one naming %s", tc.worker, err, tc.path)
		}
	}
}

// Issue #20: the estimator selection (engine-wide or per role) is accepted where it selects what
// aisim models (estimation_mode auto or op_level, fallback_policy deny), and so is
// enable_chunked_prefill: true (aisim always chunks prompts); anything else is exit 2 naming
// the field.
func TestDecodeEstimatorSelectionAndChunkedPrefill(t *testing.T) {
	const base = "engine: {model: m, hardware: h200_sxm, backend: vllm, %s workers: {aggregated: %s}}"
	for _, ok := range [][2]string{
		{"estimation_mode: op_level, fallback_policy: deny, enable_chunked_prefill: true,", "{}"},
		{"estimation_mode: auto,", "{}"},
		{"", "{timing: {type: default, estimation_mode: op_level, fallback_policy: deny}}"},
	} {
		if _, err := Decode(Predict, []byte(fmt.Sprintf(base, ok[0], ok[1])), nil); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, tc := range []struct{ engine, worker, path string }{
		{"estimation_mode: fpm_interpolation,", "{}", "engine.estimation_mode"},
		{"estimation_mode: fpm_regression,", "{}", "engine.estimation_mode"},
		{"fallback_policy: allow,", "{}", "engine.fallback_policy"},
		{"enable_chunked_prefill: false,", "{}", "engine.enable_chunked_prefill"},
		{"enable_chunked_prefill: yes please,", "{}", "engine.enable_chunked_prefill"},
		{"", "{timing: {type: default, estimation_mode: fpm_interpolation}}", "engine.workers.aggregated.timing.estimation_mode"},
		{"", "{timing: {type: fixed, prefill_ms: 1, decode_ms: 1, fallback_policy: deny}}", "engine.workers.aggregated.timing.fallback_policy"},
	} {
		_, err := Decode(Predict, []byte(fmt.Sprintf(base, tc.engine, tc.worker)), nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("%s %s: error = %v, want one naming %s", tc.engine, tc.worker, err, tc.path)
		}
	}
}

// Issue #20: recommend accepts the adapter-owned router and planner sections as predict does (the
// shared admission check, which mirrors the engine stack, reports them as unknown; aisim drops
// only those two problems) and ignores them.
func TestDecodeRecommendAdapterSections(t *testing.T) {
	d, err := Decode(Recommend, []byte(minimal+"router: {policy: {choices: [round_robin, kv_router]}, prefill_load_model: {type: none}}\nplanner: {policy: disabled}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"router", "planner"}, d.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if _, err := Decode(Recommend, []byte(minimal+"router: {}\nengine2: {}"), nil); err == nil || !strings.HasPrefix(err.Error(), "engine2: ") {
		t.Errorf("an unknown section next to router: error = %v, want one naming engine2", err)
	}
}
