package sourceregistries

import (
	"encoding/json"
	"fmt"
)

// shardListings is the part of a registry v1 shard the cache indexes: every version of every
// Source with its manifest digest.
type shardListings struct {
	Sources []struct {
		Publisher string `json:"publisher"`
		Name      string `json:"name"`
		Versions  []struct {
			Version        string `json:"version"`
			ManifestDigest string `json:"manifestDigest"`
		} `json:"versions"`
	} `json:"sources"`
}

// ListingsOf reads what a cached shard document lists (the fetch checked it already).
func ListingsOf(document []byte) ([]Listing, error) {
	var s shardListings
	if err := json.Unmarshal(document, &s); err != nil {
		return nil, fmt.Errorf("a cached shard is not readable: %w", err)
	}
	var out []Listing
	for _, src := range s.Sources {
		for _, v := range src.Versions {
			out = append(out, Listing{Publisher: src.Publisher, Source: src.Name, Version: v.Version, ManifestDigest: v.ManifestDigest})
		}
	}
	return out, nil
}
