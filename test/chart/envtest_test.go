package chart_test

import "sigs.k8s.io/controller-runtime/pkg/envtest"

func envtestAdmin() envtest.User {
	return envtest.User{Name: "admin", Groups: []string{"system:masters"}}
}
