package env

import (
	"context"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// notInName is what a namespace name cannot hold.
var notInName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for one test and returns its name: prefix followed by a
// generated suffix, or, with an empty prefix, one derived from the test's name. Tests leave it
// behind: a fresh name per test keeps them apart, and a control plane without a namespace
// controller could not finish deleting it anyway.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	return LabelledNamespace(t, c, prefix, nil)
}

// LabelledNamespace is Namespace with labels.
func LabelledNamespace(t testing.TB, c client.Client, prefix string, labels map[string]string) string {
	t.Helper()
	if prefix == "" {
		prefix = namePrefix(t.Name())
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace %s-...: %v", prefix, err)
	}
	return ns.Name
}

// namePrefix derives a namespace name's prefix from a test's name: lower case, each run of other
// characters than letters, digits and '-' made one '-', at most 40 characters.
func namePrefix(testName string) string {
	p := notInName.ReplaceAllString(strings.ToLower(testName), "-")
	if len(p) > 40 {
		p = p[:40]
	}
	return strings.Trim(p, "-")
}
