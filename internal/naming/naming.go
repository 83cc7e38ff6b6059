// Package naming derives deterministic names of child objects, so that creating them is
// idempotent: the same (owner, generation) always yields the same name.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MaxChildNameLength keeps child names usable as label values and Job names (63 characters).
const MaxChildNameLength = 63

// RunName is the Run of a request generation: "<request>-run-<generation>", shortened with a
// hash of the full name when it would exceed 63 characters.
func RunName(request string, generation int64) string {
	return shorten(request, "-run-"+strconv.FormatInt(generation, 10))
}

// ResearchRunName is a re-search Run of a request generation, for the window ending at the Unix
// second windowEnd: "<request>-run-<generation>-r<windowEnd>".
func ResearchRunName(request string, generation, windowEnd int64) string {
	return shorten(request, "-run-"+strconv.FormatInt(generation, 10)+"-r"+strconv.FormatInt(windowEnd, 10))
}

// IsResearchRunName reports whether name is a re-search Run of the request generation, for any
// window end: the name ResearchRunName gives, shortened names included (their hash prefix
// differs from RunName's, so a prefix test would miss them).
func IsResearchRunName(name, request string, generation int64) bool {
	i := strings.LastIndex(name, "-r")
	if i < 0 {
		return false
	}
	end, err := strconv.ParseInt(name[i+2:], 10, 64)
	return err == nil && ResearchRunName(request, generation, end) == name
}

// CandidateName is a published candidate of a Run: "<run>-<candidate id digits>".
func CandidateName(run, candidateID string) string {
	return shorten(run, "-c"+digitsOf(candidateID))
}

// VerificationJobName is the verification Job of a request's deployed DynamoGraphDeployment
// generation: "<request>-verify-<generation>".
func VerificationJobName(request string, deploymentGeneration int64) string {
	return shorten(request, "-verify-"+strconv.FormatInt(deploymentGeneration, 10))
}

// JobName is a Run's search Job.
func JobName(run string) string { return shorten(run, "-search") }

// BaselineJobName is a re-search Run's baseline Job.
func BaselineJobName(run string) string { return shorten(run, "-baseline") }

// shorten returns base+suffix if it fits, else a prefix of base, an 8-hex hash of base and the
// suffix. The hash keeps distinct long names distinct.
func shorten(base, suffix string) string {
	if len(base)+len(suffix) <= MaxChildNameLength {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := MaxChildNameLength - len(suffix) - len(hash) - 1
	if keep < 1 {
		return fmt.Sprintf("x%s%s", hash, suffix)[:MaxChildNameLength]
	}
	prefix := base[:keep]
	for len(prefix) > 0 && (prefix[len(prefix)-1] == '-' || prefix[len(prefix)-1] == '.') {
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + "-" + hash + suffix
}

func digitsOf(id string) string {
	id = strings.TrimPrefix(id, "candidate-")
	out := make([]byte, 0, len(id))
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		sum := sha256.Sum256([]byte(id))
		return hex.EncodeToString(sum[:])[:8]
	}
	return string(out)
}
