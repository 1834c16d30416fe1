package service_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// The document is checked against the OpenAPI 3.1 schema itself (the one libopenapi-validator
// ships), not only for its version string.
func TestTheOpenAPIDocumentValidatesAgainstTheOpenAPI31Schema(t *testing.T) {
	resp, err := http.Get(devServer(t).URL + "/openapi/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.GetSpecInfo().VersionNumeric != 3.1 {
		t.Fatalf("OpenAPI version %s, want 3.1", doc.GetVersion())
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building the validator: %v", errs)
	}
	if ok, problems := v.ValidateDocument(); !ok {
		for _, p := range problems {
			t.Errorf("%s: %s", p.Message, p.Reason)
			for _, se := range p.SchemaValidationErrors {
				t.Errorf("  %s at %s", se.Reason, se.FieldPath)
			}
		}
	}
}
