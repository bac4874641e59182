package main

import (
	"os"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestREADMEListsConfigurationAndErrorCodes keeps the README's tables in step
// with the code: every variable with its default, every error code.
func TestREADMEListsConfigurationAndErrorCodes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, v := range envVars {
		def := "`" + v.Default + "`"
		if v.Default == "" {
			def = "(unset)"
		}
		if !strings.Contains(readme, "| `"+v.Name+"` | "+def+" |") {
			t.Errorf("README lacks the row for %s with default %q", v.Name, v.Default)
		}
	}
	for _, c := range httpx.ErrorCodes {
		if !strings.Contains(readme, "| `"+c.Code+"` |") {
			t.Errorf("README lacks error code %s", c.Code)
		}
	}
}
