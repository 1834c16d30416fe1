package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEnvironmentVariablesOverrideTheFileWithDoubleUnderscoreKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "platform.yaml")
	if err := os.WriteFile(file, []byte("Platform:\n  Authentication:\n    Mode: Local\nAI:\n  Provider: Managed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file, []string{"Platform__Authentication__Mode=Development", "PLATFORM_ENVIRONMENT=Testing", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Get("Platform:Authentication:Mode"); got != "Development" {
		t.Fatalf("mode = %q", got)
	}
	if got := c.Get("ai:provider"); got != "Managed" {
		t.Fatalf("keys are case-insensitive; provider = %q", got)
	}
	if c.Environment() != Testing || !c.IsDevelopmentOrTesting() {
		t.Fatalf("environment = %q", c.Environment())
	}
}

func TestTheEnvironmentDefaultsToProductionAndRejectsUnknownNames(t *testing.T) {
	c, err := Load("", nil)
	if err != nil || c.Environment() != Production || c.IsDevelopmentOrTesting() {
		t.Fatalf("default environment: %v %v", c, err)
	}
	if _, err := Load("", []string{"PLATFORM_ENVIRONMENT=Staging"}); err == nil {
		t.Fatal("an unknown environment must fail")
	}
}
