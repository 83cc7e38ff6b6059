package upstreamcrd_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

// TestUpstreamCRDsUnchanged: the copies in test/crds/upstream/dynamo are byte for byte the
// files whose SHA-256 the README records (the sha256sum lines), so nobody edits them.
func TestUpstreamCRDsUnchanged(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(upstreamcrd.Dir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+\.yaml)$`).FindAllStringSubmatch(string(readme), -1) {
		want[m[2]] = m[1]
	}
	for _, f := range []string{upstreamcrd.DGDFile, upstreamcrd.DGDRFile} {
		if want[f] == "" {
			t.Errorf("README.md records no SHA-256 line for %s", f)
			continue
		}
		data, err := os.ReadFile(filepath.Join(upstreamcrd.Dir(), f))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want[f] {
			t.Errorf("%s: SHA-256 %s, README.md says %s: the upstream copy was modified (copy it again, unchanged, and update the README)", f, got, want[f])
		}
	}
	if len(want) != 2 {
		t.Errorf("README.md lists %d SHA-256 lines, want 2: %v", len(want), want)
	}
}

// TestDGDVariant: the installable DGD variant differs from the upstream file only in the storage
// version (v1beta1) and the conversion strategy (None); every version keeps its schema,
// printer columns and subresources.
func TestDGDVariant(t *testing.T) {
	orig, err := upstreamcrd.Load(filepath.Join(upstreamcrd.Dir(), upstreamcrd.DGDFile))
	if err != nil {
		t.Fatal(err)
	}
	if orig.Spec.Conversion == nil || orig.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		t.Errorf("upstream conversion is no longer a webhook (%+v): revisit upstreamcrd.DGD", orig.Spec.Conversion)
	}
	got, err := upstreamcrd.DGD()
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Conversion == nil || got.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter || got.Spec.Conversion.Webhook != nil {
		t.Errorf("conversion: %+v", got.Spec.Conversion)
	}
	storage := ""
	for _, v := range got.Spec.Versions {
		if v.Storage {
			storage += v.Name
		}
	}
	if storage != "v1beta1" {
		t.Errorf("storage versions: %q, want v1beta1", storage)
	}
	want := orig.DeepCopy()
	want.Spec.Conversion = got.Spec.Conversion
	for i := range want.Spec.Versions {
		want.Spec.Versions[i].Storage = want.Spec.Versions[i].Name == "v1beta1"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the variant changes more than storage and conversion (-want +got):\n%s", diff)
	}

	dgdr, err := upstreamcrd.DGDR()
	if err != nil {
		t.Fatal(err)
	}
	if dgdr.Name != "dynamographdeploymentrequests.nvidia.com" || got.Name != "dynamographdeployments.nvidia.com" {
		t.Errorf("names: %s, %s", dgdr.Name, got.Name)
	}
}
