// Package trace summarizes request traces, generates seeded synthetic ones, and models a worker's
// prefix cache over their hash blocks. Reading a trace file (mooncake or Dynamo) is
// internal/requesttrace's, which the operator shares; the names below let aisim's packages use one
// package for traces.
package trace

import (
	"io"

	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

type (
	// Trace is a parsed trace file.
	Trace = requesttrace.Trace
	// Request is one request of a trace.
	Request = requesttrace.Request
	// ParseError names the line and field of a malformed row.
	ParseError = requesttrace.ParseError
)

const (
	// DefaultBlockSize is the mooncake format's hash-block size in tokens.
	DefaultBlockSize = requesttrace.DefaultBlockSize
	// FormatMooncake is the mooncake trace format (the default).
	FormatMooncake = requesttrace.FormatMooncake
	// FormatDynamo is Dynamo's request trace.
	FormatDynamo = requesttrace.FormatDynamo
	// DynamoSchema is the schema every record of a Dynamo request trace names.
	DynamoSchema = requesttrace.DynamoSchema
)

// Read parses a trace file of format (mooncake or dynamo); see requesttrace.Read.
func Read(path, format string, blockSize int) (*Trace, error) {
	return requesttrace.Read(path, format, blockSize)
}

// Parse reads mooncake JSONL; see requesttrace.Parse.
func Parse(r io.Reader, blockSize int) (*Trace, error) { return requesttrace.Parse(r, blockSize) }
