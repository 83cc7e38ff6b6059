// Package upstreamcrd loads the Dynamo platform's own CustomResourceDefinitions
// (test/crds/upstream/dynamo, copied unchanged from ai-dynamo/dynamo) for the tests: the real
// DynamoGraphDeployment CRD that judges what the renderer writes, and the real
// DynamoGraphDeploymentRequest CRD that dgdr-operator's CRD is installed over.
//
// It is the one place that derives the installable test variant of the DGD CRD (DGD).
package upstreamcrd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The upstream files, in Dir.
const (
	DGDFile  = "nvidia.com_dynamographdeployments.yaml"
	DGDRFile = "nvidia.com_dynamographdeploymentrequests.yaml"
)

// DGDVersion is the DynamoGraphDeployment version the renderer writes, which the test variant
// stores.
const DGDVersion = "v1beta1"

// Dir is test/crds/upstream/dynamo in the repository.
func Dir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "crds", "upstream", "dynamo"))
}

// DGDR is the Dynamo platform's DynamoGraphDeploymentRequest CRD exactly as upstream ships it
// (v1beta1 storage, v1alpha1 served, no conversion): installable as is.
func DGDR() (*apiextensionsv1.CustomResourceDefinition, error) {
	return Load(filepath.Join(Dir(), DGDRFile))
}

// DGD is the Dynamo platform's DynamoGraphDeployment CRD, made installable on an API server
// without the Dynamo operator. Every version's schema, printer columns and subresources are
// upstream's, unchanged; exactly two things differ, both in this in-memory copy only:
//
//   - the storage version is v1beta1 (upstream stores v1alpha1), and
//   - spec.conversion is None (upstream: Webhook, served by the Dynamo operator's
//     dynamo-system/dynamo-operator-webhook-service).
//
// Why: as shipped, the CRD stores v1alpha1 and converts every v1beta1 object through the
// Dynamo operator's conversion webhook. A test control plane has no Dynamo operator, so every
// v1beta1 write, even a server-side dry run, would fail at that conversion before the schema
// is ever consulted. Storing v1beta1 needs no conversion for the version the renderer writes,
// so the API server validates the rendered object against upstream's v1beta1 schema (and its
// CEL rules) directly. (v1alpha1 stays served; with conversion None its objects would be
// rewritten only in apiVersion, which no test relies on.)
func DGD() (*apiextensionsv1.CustomResourceDefinition, error) { return DGDIn(Dir()) }

// DGDIn is DGD read from dir, for binaries whose source tree is elsewhere (the sandbox).
func DGDIn(dir string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := Load(filepath.Join(dir, DGDFile))
	if err != nil {
		return nil, err
	}
	found := false
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.Storage = v.Name == DGDVersion
		found = found || v.Storage
	}
	if !found {
		return nil, fmt.Errorf("%s: no version %s", DGDFile, DGDVersion)
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return crd, nil
}

// WriteDGD writes DGD() as YAML into dir and returns the file's path, for installers that take
// CRD files (the sandbox). The upstream file itself is never modified.
func WriteDGD(dir string) (string, error) {
	crd, err := DGD()
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(crd)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "dynamographdeployments.nvidia.com-test-variant.yaml")
	return path, os.WriteFile(path, b, 0o644)
}

// Load reads one CustomResourceDefinition from a YAML file (strictly: an unknown field is an
// error).
func Load(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The files start with a licence comment and a document separator: take the one document
	// that is not empty.
	var doc []byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		chunk, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(chunk, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		if doc != nil {
			return nil, fmt.Errorf("%s: more than one document", path)
		}
		doc = chunk
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(doc, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
	}
	return crd, nil
}
