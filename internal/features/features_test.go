package features_test

import (
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/features"
)

func TestDGDRV1Beta2IsPreReleaseAndOffByDefault(t *testing.T) {
	g := features.New()
	if g.Enabled(features.DGDRV1Beta2) {
		t.Fatal("DGDRV1Beta2 must be off by default")
	}
	spec, ok := g.GetAll()[features.DGDRV1Beta2]
	if !ok {
		t.Fatal("DGDRV1Beta2 is not registered")
	}
	if spec.PreRelease == "" || spec.PreRelease == "GA" {
		t.Errorf("DGDRV1Beta2 pre-release = %q, want a pre-release stage", spec.PreRelease)
	}
}

func TestFromConfig(t *testing.T) {
	cases := []struct {
		name    string
		values  map[string]bool
		want    bool
		wantErr bool
	}{
		{name: "unset", values: nil, want: false},
		{name: "on", values: map[string]bool{"DGDRV1Beta2": true}, want: true},
		{name: "off", values: map[string]bool{"DGDRV1Beta2": false}, want: false},
		{name: "unknown gate", values: map[string]bool{"NoSuchGate": true}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := features.FromConfig(tc.values)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Enabled(features.DGDRV1Beta2); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
}
