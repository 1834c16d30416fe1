// Package config reads the platform's hierarchical settings (`Platform:Authentication:Mode`,
// `AI:Provider`, ...) from an optional YAML file, overridden by environment variables that spell
// the same keys with `__` as the separator (`Platform__Authentication__Mode`).
package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Environments the platform knows; PLATFORM_ENVIRONMENT selects one.
const (
	Development = "Development"
	Testing     = "Testing"
	Production  = "Production"

	EnvironmentVariable = "PLATFORM_ENVIRONMENT"
)

// Config is a flat, case-insensitive view of the settings.
type Config struct {
	values      map[string]string
	environment string
}

// Load reads file (optional: "" means none) and then environ, as os.Environ returns it.
func Load(file string, environ []string) (*Config, error) {
	c := &Config{values: map[string]string{}}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		var tree map[string]any
		if err := yaml.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
		flatten("", tree, c.values)
	}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if name == EnvironmentVariable {
			c.environment = value
			continue
		}
		if strings.Contains(name, "__") {
			c.values[normalizeKey(strings.ReplaceAll(name, "__", ":"))] = value
		}
	}
	switch c.environment {
	case "":
		c.environment = Production
	case Development, Testing, Production:
	default:
		return nil, fmt.Errorf("%s=%q: must be %s, %s or %s", EnvironmentVariable, c.environment, Development, Testing, Production)
	}
	return c, nil
}

// FromMap builds a configuration directly, for tests and embedding.
func FromMap(environment string, values map[string]string) *Config {
	c := &Config{values: map[string]string{}, environment: environment}
	for k, v := range values {
		c.values[normalizeKey(k)] = v
	}
	return c
}

// Get returns the value of a key such as "Platform:Authentication:Mode", or "".
func (c *Config) Get(key string) string { return c.values[normalizeKey(key)] }

// GetOr returns the value of key, or def when it is not set.
func (c *Config) GetOr(key, def string) string {
	if v, ok := c.values[normalizeKey(key)]; ok {
		return v
	}
	return def
}

// Environment is Development, Testing or Production (the default).
func (c *Config) Environment() string { return c.environment }

// IsDevelopmentOrTesting reports whether development-only features may be enabled.
func (c *Config) IsDevelopmentOrTesting() bool {
	return c.environment == Development || c.environment == Testing
}

// Keys lists the keys that are set, for diagnostics (never their values: some are secrets).
func (c *Config) Keys() []string {
	keys := make([]string, 0, len(c.values))
	for k := range c.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrNotSupported is returned for a setting value the platform does not implement.
var ErrNotSupported = errors.New("not supported")

func normalizeKey(key string) string { return strings.ToLower(key) }

func flatten(prefix string, node any, out map[string]string) {
	switch v := node.(type) {
	case map[string]any:
		for k, child := range v {
			key := k
			if prefix != "" {
				key = prefix + ":" + k
			}
			flatten(key, child, out)
		}
	case nil:
	default:
		out[normalizeKey(prefix)] = fmt.Sprint(v)
	}
}
