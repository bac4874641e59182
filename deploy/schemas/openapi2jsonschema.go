//go:build ignore

// Openapi2jsonschema writes the JSON schemas kubeconform validates the chart
// against, the way kubeconform's openapi2jsonschema does, but only for the
// kinds the chart and its examples render, without descriptions, and compact:
//
//	go run deploy/schemas/openapi2jsonschema.go -out deploy/schemas k8s swagger.json io.k8s.api.apps.v1.Deployment ...
//	go run deploy/schemas/openapi2jsonschema.go -out deploy/schemas crd crd.yaml ...
//
// Kubernetes definitions are expanded in place (standalone) and made strict
// (additionalProperties false on every object with properties), a quantity
// a string or a number; a CRD's
// openAPIV3Schema of each served version gets the same treatment. Each schema
// lands at <group>/<kind>_<version>.json, the path the test's
// -schema-location template names. Where the schemas come from is recorded
// in deploy/schemas/README.md.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	out := flag.String("out", "deploy/schemas", "directory the schemas are written to")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi2jsonschema -out DIR k8s SWAGGER DEFINITION... | crd CRD.yaml...")
		os.Exit(2)
	}
	var err error
	switch args[0] {
	case "k8s":
		err = k8s(*out, args[1], args[2:])
	case "crd":
		for _, f := range args[1:] {
			if err = crd(*out, f); err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("unknown mode %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi2jsonschema:", err)
		os.Exit(1)
	}
}

// k8s writes one standalone strict schema per named definition of a
// Kubernetes swagger.json.
func k8s(out, swagger string, names []string) error {
	b, err := os.ReadFile(swagger)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", swagger, err)
	}
	// A quantity is written as a string or a number (cpu: 1); the API server
	// takes both, the swagger says string.
	doc.Definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{
		"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}},
	}
	for _, name := range names {
		def, ok := doc.Definitions[name]
		if !ok {
			return fmt.Errorf("%s: no definition %s", swagger, name)
		}
		s, err := expand(def, doc.Definitions, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		gvk, _ := s.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
		if len(gvk) != 1 {
			return fmt.Errorf("%s: not one group-version-kind", name)
		}
		g := gvk[0].(map[string]any)
		group, version, kind := g["group"].(string), g["version"].(string), g["kind"].(string)
		apiVersion := version
		if group != "" {
			apiVersion = group + "/" + version
		}
		props := s.(map[string]any)["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
		props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
		if err := write(out, group, kind, version, strict(s)); err != nil {
			return err
		}
	}
	return nil
}

// expand replaces every $ref by its definition; seen guards against cycles
// (JSONSchemaProps only, which the rendered kinds do not reach).
func expand(v any, defs map[string]any, seen []string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			for _, s := range seen {
				if s == name {
					return nil, fmt.Errorf("cyclic reference %s", name)
				}
			}
			def, ok := defs[name]
			if !ok {
				return nil, fmt.Errorf("unknown reference %s", ref)
			}
			return expand(def, defs, append(seen, name))
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			x, err := expand(e, defs, seen)
			if err != nil {
				return nil, err
			}
			m[k] = x
		}
		return m, nil
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			x, err := expand(e, defs, seen)
			if err != nil {
				return nil, err
			}
			a[i] = x
		}
		return a, nil
	}
	return v, nil
}

// crd writes the schema of every served version of every
// CustomResourceDefinition in a YAML file.
func crd(out, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if doc["kind"] != "CustomResourceDefinition" {
			continue
		}
		spec := doc["spec"].(map[string]any)
		group := spec["group"].(string)
		kind := spec["names"].(map[string]any)["kind"].(string)
		for _, v := range spec["versions"].([]any) {
			v := v.(map[string]any)
			if v["served"] != true {
				continue
			}
			s, ok := v["schema"].(map[string]any)["openAPIV3Schema"]
			if !ok {
				return fmt.Errorf("%s: %s %s has no schema", file, kind, v["name"])
			}
			if err := write(out, group, kind, v["name"].(string), strict(s)); err != nil {
				return err
			}
		}
	}
}

// strict drops descriptions, closes every object that lists its properties
// and has no additionalProperties of its own, and turns int-or-string into
// the JSON schema that accepts both, as kubeconform's openapi2jsonschema.
func strict(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			switch k {
			case "description", "x-kubernetes-group-version-kind":
				continue
			case "properties", "patternProperties", "definitions":
				// A map of names to schemas: the names are data.
				props := map[string]any{}
				for name, p := range e.(map[string]any) {
					props[name] = strict(p)
				}
				m[k] = props
				continue
			}
			m[k] = strict(e)
		}
		if _, ok := m["properties"]; ok {
			if _, set := m["additionalProperties"]; !set {
				m["additionalProperties"] = false
			}
		}
		if m["format"] == "int-or-string" || m["x-kubernetes-int-or-string"] == true {
			delete(m, "type")
			delete(m, "format")
			m["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = strict(e)
		}
		return a
	}
	return v
}

// write stores a schema at out/<group>/<kind>_<version>.json, the core group
// under its version (v1), as kubeconform's {{ .Group }} names it.
func write(out, group, kind, version string, s any) error {
	dir := group
	if dir == "" {
		dir = version
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	path := filepath.Join(out, dir, strings.ToLower(kind)+"_"+version+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fmt.Println(path)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
