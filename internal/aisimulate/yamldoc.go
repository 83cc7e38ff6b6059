package aisimulate

import (
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// DecodeDocument decodes a YAML (or JSON) document into a JSON object whose numbers keep the form
// they were written in (json.Number), so that 1024.0 stays distinguishable from 1024 the way
// AISimulate's strict YAML loading distinguishes them. Errors are *document.Error and name the
// path (duplicate keys, non-finite numbers).
func DecodeDocument(data []byte) (map[string]any, error) {
	v, err := document.ParseMapping(data)
	if err != nil {
		return nil, err
	}
	return v.JSON().(map[string]any), nil
}
