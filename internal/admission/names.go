package admission

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// MaxDeploymentNameLength bounds spec.deployment.name: Dynamo derives Service and label values
// from a DynamoGraphDeployment's name, which must therefore be at most 63 characters.
const MaxDeploymentNameLength = 63

// MaxModelRepoNameLength is the longest repository name Hugging Face allows (huggingface_hub
// validate_repo_id).
const MaxModelRepoNameLength = 96

var (
	// hfSegment is one segment of a Hugging Face repository id: ASCII letters, digits, "_", "-"
	// and ".", starting and ending with a letter, digit or "_" (huggingface_hub's REPO_ID_REGEX
	// with its word boundaries, restricted to ASCII).
	hfSegment = `[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?`
	// hfRepoID is [namespace/]name: Hugging Face still serves a few models without a namespace
	// (gpt2), so the namespace is optional as in huggingface_hub.
	hfRepoID = regexp.MustCompile(`^(?:` + hfSegment + `/)?(` + hfSegment + `)$`)
	// localModelPath is an absolute path of plain path characters.
	localModelPath = regexp.MustCompile(`^/[A-Za-z0-9_.+@/-]*$`)
	// revisionRE is a branch, tag or commit as Hugging Face names them (git ref names, including
	// refs/pr/N), restricted to the characters such names use in practice.
	revisionRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+/-]*$`)
)

// ValidateModelName checks spec.model.name: a Hugging Face repository id ([org/]name: the
// characters Hugging Face allows, no "--" or "..", not ending in ".git", the name at most 96
// characters), or, only when allowLocalPaths (the operator configuration's
// models.allowLocalPaths), an absolute clean local path. A scheme or URL, a relative path,
// "..", whitespace, control characters and terminal escapes are refused. The name reaches the
// engines' command lines, terminals (dgdrctl status) and the UI.
func ValidateModelName(name string, allowLocalPaths bool, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return nil // required: the schema reports it
	}
	if strings.HasPrefix(name, "/") {
		if !allowLocalPaths {
			return field.ErrorList{field.Invalid(fldPath, name,
				"must be a Hugging Face model id (org/name); local model paths are not allowed by this operator's configuration (models.allowLocalPaths)")}
		}
		if !localModelPath.MatchString(name) || path.Clean(name) != name {
			return field.ErrorList{field.Invalid(fldPath, name,
				`must be an absolute, clean local path (letters, digits and "_.+@/-"; no "." or ".." elements, no trailing "/")`)}
		}
		return nil
	}
	m := hfRepoID.FindStringSubmatch(name)
	switch {
	case m == nil:
		return field.ErrorList{field.Invalid(fldPath, name,
			`must be a Hugging Face model id: [org/]name of letters, digits, "_", "-" and ".", each part starting and ending with a letter, digit or "_" (no scheme, URL or path)`)}
	case strings.Contains(name, "--") || strings.Contains(name, ".."):
		return field.ErrorList{field.Invalid(fldPath, name, `must be a Hugging Face model id: "--" and ".." are not allowed`)}
	case strings.HasSuffix(name, ".git"):
		return field.ErrorList{field.Invalid(fldPath, name, `must be a Hugging Face model id: it must not end in ".git"`)}
	case len(m[1]) > MaxModelRepoNameLength:
		return field.ErrorList{field.Invalid(fldPath, name, fmt.Sprintf("must be a Hugging Face model id: the name after the org may be at most %d characters", MaxModelRepoNameLength))}
	}
	return nil
}

// ValidateRevision checks spec.model.revision: a branch, tag or commit (a git ref name such as
// main, v1.0, refs/pr/3, or a commit hash). Spaces, control characters, terminal escapes, a
// leading "-" (an engine flag), "..", "//", "@{", a trailing "/" or "." and a ".lock" suffix are
// refused.
func ValidateRevision(rev string, fldPath *field.Path) field.ErrorList {
	if rev == "" {
		return nil
	}
	if !revisionRE.MatchString(rev) || strings.Contains(rev, "..") || strings.Contains(rev, "//") ||
		strings.HasSuffix(rev, "/") || strings.HasSuffix(rev, ".") || strings.HasSuffix(rev, ".lock") {
		return field.ErrorList{field.Invalid(fldPath, rev,
			`must be a branch, tag or commit: letters, digits and "_.+/-", starting with a letter, digit or "_", without "..", "//", a trailing "/" or "." or a ".lock" suffix`)}
	}
	return nil
}

// ValidateDeploymentName checks spec.deployment.name: a DNS-1123 subdomain of at most 63
// characters (the CRD schema says the same; dgdrctl and the webhook repeat it with the same path).
func ValidateDeploymentName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return nil // admission materializes the request's name
	}
	if len(name) > MaxDeploymentNameLength {
		return field.ErrorList{field.TooLong(fldPath, name, MaxDeploymentNameLength)}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// typedEngineKeys are the effective input's engine fields that only the typed spec sets:
// engine.model from spec.model.name (whose rules and pinned revision would otherwise be
// bypassed) and engine.hardware from spec.hardware.gpu.sku.
var typedEngineKeys = []struct{ key, typed string }{
	{"model", "spec.model.name"},
	{"hardware", "spec.hardware.gpu.sku"},
}

// ValidateOverridesEngine refuses inputOverrides that set (or delete) engine.model or
// engine.hardware, or delete engine as a whole: those come only from the typed spec.
func ValidateOverridesEngine(raw []byte) field.ErrorList {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil // the shape check reports it
	}
	engine, ok := doc["engine"]
	if !ok {
		return nil
	}
	p := aisimulate.OverridesPath.Child("engine")
	if strings.TrimSpace(string(engine)) == "null" {
		return field.ErrorList{field.Forbidden(p, "inputOverrides may not delete engine: engine.model and engine.hardware come from spec.model.name and spec.hardware.gpu.sku")}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(engine, &fields); err != nil {
		return nil // the effective-input rules report the type
	}
	var errs field.ErrorList
	for _, k := range typedEngineKeys {
		if _, set := fields[k.key]; set {
			errs = append(errs, field.Forbidden(p.Child(k.key), fmt.Sprintf("set %s instead: inputOverrides may not set engine.%s", k.typed, k.key)))
		}
	}
	return errs
}
