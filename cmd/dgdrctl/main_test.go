package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

func TestVersionCommand(t *testing.T) {
	info := version.Get()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "one line", args: []string{"version"}, want: "dgdrctl " + info.String() + "\n"},
		{name: "json", args: []string{"version", "-o", "json"}, want: func() string {
			b, _ := json.MarshalIndent(info, "", "  ")
			return string(b) + "\n"
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := newRootCommand("dgdrctl", &out, &errOut)
			cmd.SetArgs(c.args)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("%v: %v\n%s", c.args, err, errOut.String())
			}
			if diff := cmp.Diff(c.want, out.String()); diff != "" {
				t.Errorf("%v (-want +got):\n%s", c.args, diff)
			}
		})
	}
}

func TestVersionCommandRejectsUnknownOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := newRootCommand("dgdrctl", &out, &errOut)
	cmd.SetArgs([]string{"version", "-o", "yaml"})
	if err := cmd.Execute(); err == nil {
		t.Fatal("version -o yaml succeeded, want an error naming --output")
	}
}
