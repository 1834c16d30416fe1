package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
)

// Digest is the digest of the canonical JSON of the definition: encoding/json writes struct
// fields in declaration order and map keys sorted, so equal definitions digest equally. Flows
// report it, published versions and runs record it. The publication policy is left out: it says
// who publishes, not what runs (and the CRD defaults it inside stored snapshots).
func (d *FlowDefinition) Digest() Digest {
	c := *d
	c.Publication = ""
	data, err := json.Marshal(&c)
	if err != nil {
		// A FlowDefinition holds only strings, numbers, booleans, maps and slices of them.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return Digest("sha256:" + hex.EncodeToString(sum[:]))
}

// semanticVersionPattern is the pattern of SemanticVersion: semver 2.0.0, strict.
var semanticVersionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`)

// IsSemanticVersion reports whether v is a SemanticVersion: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]
// without a leading v or leading zeros.
func IsSemanticVersion(v string) bool {
	return len(v) <= 128 && semanticVersionPattern.MatchString(v)
}
