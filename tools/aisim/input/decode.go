package input

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Decode parses YAML, applies --set overrides in order and decodes the
// document for cmd. Errors are *FieldError (path + reason).
//
// A recommend document is first checked by the contract package (internal/aisimulate: the
// bundled schema and every cross-field rule), exactly as the operator checks effective inputs;
// the typed decoding after it refuses, as "not supported by aisim", what AISimulate accepts but
// aisim does not simulate. Predict documents have no bundled schema yet, so their decoding still
// checks types and ranges itself.
func Decode(cmd Command, data []byte, sets []string) (*Document, error) {
	raw, err := document.Parse(data)
	if err != nil {
		var derr *document.Error
		if errors.As(err, &derr) {
			return nil, &FieldError{Path: strings.Join(derr.Path, "."), Reason: derr.Message}
		}
		return nil, &FieldError{Reason: err.Error()}
	}
	if raw.Kind == document.KindNull {
		raw = &document.Value{Kind: document.KindMap, Map: map[string]*document.Value{}}
	}
	if raw.Kind != document.KindMap {
		return nil, errf("", "the document must be a mapping, got %s", raw.Kind)
	}
	for _, s := range sets {
		if err := document.ApplySet(raw, s); err != nil {
			return nil, &FieldError{Reason: err.Error()}
		}
		if cmd == Predict {
			if p, _, _ := cutPath(s); p == "optimization" || p == "optimizer" {
				return nil, errf("", "--set %s: %s is not allowed in predict", s, p)
			}
		}
	}
	if cmd == Recommend {
		if problems := adapterSectionsAllowed(aisimulate.CheckInput(raw.JSON().(map[string]any))); len(problems) > 0 {
			return nil, contractError(problems)
		}
	}
	return DecodeValue(cmd, raw)
}

// adapterSectionsAllowed drops the shared check's "unknown field" problems of the top-level
// router and planner sections. The check mirrors AISimulate's engine stack, which the operator's
// search Job runs and which has no adapters; with the Dynamo stack AISimulate accepts both
// sections, and aisim accepts and ignores them in recommend as it does in predict (it routes
// round-robin and never scales its pools). Every other problem, including the contract rules
// that forbid these sections with min_gpus or analytical EPD, stays.
func adapterSectionsAllowed(problems []aisimulate.Problem) []aisimulate.Problem {
	return slices.DeleteFunc(problems, func(p aisimulate.Problem) bool {
		return len(p.Path) == 1 && (p.Path[0] == "router" || p.Path[0] == "planner") &&
			strings.HasPrefix(p.Message, "unknown field")
	})
}

// contractError reports the contract's problems: the first one's path, every one's reason.
func contractError(problems []aisimulate.Problem) *FieldError {
	e := &FieldError{Path: strings.Join(problems[0].Path, "."), Reason: problems[0].Message}
	for _, p := range problems[1:] {
		e.Reason += "; " + p.String()
	}
	return e
}

func cutPath(expr string) (string, string, bool) {
	for i := 0; i < len(expr); i++ {
		if expr[i] == '.' || expr[i] == '=' {
			return expr[:i], expr[i:], true
		}
	}
	return expr, "", false
}

// DecodeValue decodes an already parsed document.
func DecodeValue(cmd Command, raw *document.Value) (*Document, error) {
	known := []string{"traffic", "engine", "evaluation", "execution", "optimization", "optimizer", "router", "planner"}
	root, err := newObject("", raw, known, nil)
	if err != nil {
		return nil, err
	}
	for _, k := range raw.Keys {
		if k == "" || containsDot(k) {
			return nil, errf(k, "top-level keys must be non-empty and contain no dots")
		}
	}
	doc := &Document{Command: cmd, Raw: raw}
	// execution.resources budgets AISimulate's supervisor process (memory, CPUs, start and stop
	// timeouts): aisim runs in-process and has none, so the section (checked by the contract
	// above) is accepted and ignored.
	for _, k := range []string{"router", "planner", "execution"} {
		if x := root.get(k); x != nil {
			if x.Kind != document.KindMap {
				return nil, errf(k, "expected a mapping, got %s", x.Kind)
			}
			doc.Ignored = append(doc.Ignored, k)
		}
	}
	if cmd == Predict {
		for _, k := range []string{"optimization", "optimizer"} {
			if _, ok := raw.Map[k]; ok {
				return nil, errf(k, "not allowed in predict (recommend only)")
			}
		}
	} else if _, ok := raw.Map["optimization"]; !ok {
		return nil, errf("optimization", "required (use {} for all defaults)")
	}
	if doc.Traffic, err = decodeTraffic(cmd, root); err != nil {
		return nil, err
	}
	if doc.Evaluation, err = decodeEvaluation(root); err != nil {
		return nil, err
	}
	if cmd == Recommend {
		if doc.Optimization, err = decodeOptimization(root, doc.Evaluation.SLA); err != nil {
			return nil, err
		}
		if doc.Optimizer, err = decodeOptimizer(root); err != nil {
			return nil, err
		}
	}
	if doc.Engine, err = decodeEngine(cmd, root, doc.Optimization.Hardware); err != nil {
		return nil, err
	}
	for _, role := range slices.Sorted(maps.Keys(doc.Engine.Workers)) {
		if doc.Engine.Workers[role].StartupSeconds >= 0 {
			doc.Ignored = append(doc.Ignored, "engine.workers."+role+".startup_seconds")
		}
	}
	if err := crossChecks(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func containsDot(s string) bool { return slices.Contains([]byte(s), '.') }

func crossChecks(doc *Document) error {
	t := doc.Traffic
	if cl := doc.Engine.ContextLength; cl > 0 && t.InputTokens+t.OutputTokens > cl {
		return errf("traffic.source", "input_tokens + output_tokens (%d) exceeds engine.context_length (%d)", t.InputTokens+t.OutputTokens, cl)
	}
	if doc.Command == Recommend {
		branches := len(doc.Engine.Modes)
		if doc.Optimizer.MaxTrials < branches {
			return errf("optimizer.max_trials", "must be >= the number of mode branches (%d)", branches)
		}
		if doc.Optimization.Target == output.TargetMinGPUs {
			if !t.Load.Intensity.IsFixed() {
				return errf("traffic.load", "min_gpus requires a fixed load (no domains)")
			}
			if t.Load.Type == LoadKVCapacityFraction {
				return errf("traffic.load.type", "min_gpus does not support kv_capacity_fraction")
			}
		}
	}
	return nil
}
