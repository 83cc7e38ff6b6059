package aisimulate

import "strings"

// SchemaJSONForTest is the bundled schema document.
var SchemaJSONForTest = schemaJSON

// DomainFieldsForTest lists the fields rules.go treats as recommend domains: "path elem range".
func DomainFieldsForTest() []string {
	var out []string
	for _, f := range domainFields() {
		out = append(out, strings.Join(f.path, ".")+" "+f.elem+" "+f.rangeKind)
	}
	return out
}

// GPUProductsForTest and NoGPUProductForTest are the hand-written label tables.
var (
	GPUProductsForTest  = gpuProducts
	NoGPUProductForTest = noGPUProduct
)
