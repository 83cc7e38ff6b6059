package deps

import (
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "k8s.io/component-base/featuregate"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
)
