package input

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// encoderOnly are the Worker fields that belong to the encoder role alone (which aisim refuses as
// a whole); the aggregated, prefill and decode roles do not have them.
var encoderOnly = map[string]bool{"mode": true, "replicas": true, "tensor": true, "batch_size": true,
	"backend_version": true, "host_loop": true, "host_profile": true, "transfer": true, "vision": true,
	"latency_correction": true, "rate_degradation": true}

// typedLeaves lists the JSON paths of every field of t below prefix: a nested struct is walked,
// anything else (a scalar, a list, a section kept as written, a count-or-keyword) is a leaf.
func typedLeaves(prefix string, t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[intstr.IntOrString]() {
		return []string{prefix}
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || f.Type == reflect.TypeFor[json.RawMessage]() {
			if name != "" && name != "-" {
				out = append(out, join(prefix, name))
			}
			continue
		}
		out = append(out, typedLeaves(join(prefix, name), f.Type)...)
	}
	return out
}

// TestPredictKnowsEveryTypedField: every field the typed prediction document (the operator's
// reading of AISimulate's predict input) can carry is one aisim's predict decoding knows, either
// modelling it or refusing it as not supported; none is an unknown field, so a document the
// operator or AISimulate writes is never refused by aisim as malformed.
func TestPredictKnowsEveryTypedField(t *testing.T) {
	const disaggregated = "engine: {mode: disaggregated, model: m, hardware: h200_sxm, workers: {prefill: {}, decode: {}}}\n"
	var paths []string
	for _, p := range typedLeaves("", reflect.TypeFor[output.PredictionConfig]()) {
		role, field, ok := strings.Cut(strings.TrimPrefix(p, "engine.workers."), ".")
		if !strings.HasPrefix(p, "engine.workers.") || !ok {
			paths = append(paths, p)
			continue
		}
		top, _, _ := strings.Cut(field, ".")
		if (role == RoleAggregated || role == RolePrefill || role == RoleDecode) == !encoderOnly[top] {
			paths = append(paths, p)
		}
	}
	if len(paths) < 100 {
		t.Fatalf("only %d typed fields found; the walk is broken", len(paths))
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			doc := minimalPredict
			if strings.HasPrefix(p, "engine.workers.prefill.") || strings.HasPrefix(p, "engine.workers.decode.") || strings.HasPrefix(p, "engine.kv_transfer.") {
				doc = disaggregated
			}
			_, err := Decode(Predict, []byte(doc), []string{p + "=1"})
			var ferr *FieldError
			if errors.As(err, &ferr) && ferr.Reason == "unknown field" {
				t.Errorf("aisim predict calls %s an unknown field: %v", p, err)
			}
		})
	}
}
