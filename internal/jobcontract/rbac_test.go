package jobcontract_test

import (
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

func TestReporterRulesAreMinimal(t *testing.T) {
	for _, r := range jobcontract.ReporterRules() {
		for _, v := range r.Verbs {
			if v == "*" || v == "update" && r.Resources[0] == "dynamographdeploymentruns" {
				t.Errorf("rule %+v is too broad", r)
			}
		}
	}
}
