// Package testenv is internal/testing/env under its former name, for the tests not yet moved.
package testenv

import "github.com/dgdr-operator/dgdr-operator/internal/testing/env"

// Env is env.Env.
type Env = env.Env

// Options is env.Options.
type Options = env.Options

// ConvertPath is env.ConvertPath.
const ConvertPath = env.ConvertPath

// Start is env.Start.
func Start(opts Options) (*Env, error) { return env.Start(opts) }

// Root is env.Root.
func Root() string { return env.Root() }
