package deps
import (
	_ "github.com/spf13/cobra"
	_ "sigs.k8s.io/yaml"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/evanphx/json-patch/v5"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "k8s.io/component-base/featuregate"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "github.com/prometheus/client_golang/prometheus"
)
