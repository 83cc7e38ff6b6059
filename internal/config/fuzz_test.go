package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// FuzzDecode: arbitrary configuration files never panic the strict decoder, and an accepted
// configuration is complete (defaults filled) and valid.
func FuzzDecode(f *testing.F) {
	for _, glob := range []string{"../../examples/config/*.yaml", "../../config/dev/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			data, _ := os.ReadFile(file)
			f.Add(data)
		}
	}
	f.Add([]byte(header + "planner: {image: x}\nlimits: {maxTrials: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Decode(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if cfg.Planner.Image == "" || cfg.RunRetention == nil || cfg.Limits.MaxTrials == nil || cfg.Webhook.Port == nil {
			t.Fatalf("accepted configuration is incomplete: %+v", cfg)
		}
		if errs := config.Validate(cfg); len(errs) > 0 {
			t.Fatalf("accepted configuration does not validate: %v", errs)
		}
	})
}
