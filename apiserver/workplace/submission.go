package workplace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Limits of what a person submits to an Entry or sends in a conversation.
const (
	// MaxMessageLength bounds the text of a message and of a PrimaryInput field, in bytes.
	MaxMessageLength = 16 * 1024
	// MaxFieldLength bounds the value of any other field, in bytes.
	MaxFieldLength = 4 * 1024
)

// Submission is what a person submitted to an Entry, checked against its published fields.
type Submission struct {
	// Values are the fields' values, with the defaults of the fields left empty.
	Values map[string]any
	// Text is the PrimaryInput field's text: the message the conversation starts with.
	Text string
}

// CheckSubmission checks input, the submitted values by field name, against the fields of a
// published Entry: every name is a field, required fields have a value, each value has its
// field's type (a Choice one of its choices), texts are bounded. Errors carry the path
// input.<field>. Fields left out take their default.
func CheckSubmission(p *platformv1.EntryPresentation, input map[string]json.RawMessage) (Submission, field.ErrorList) {
	path := field.NewPath("input")
	var errs field.ErrorList
	fields := map[string]*platformv1.EntryField{}
	for i := range p.Fields {
		fields[p.Fields[i].Name] = &p.Fields[i]
	}
	for name := range input {
		if fields[name] == nil {
			errs = append(errs, field.NotSupported(path.Key(name), name, fieldNames(p.Fields)))
		}
	}
	out := Submission{Values: map[string]any{}}
	for i := range p.Fields {
		f := &p.Fields[i]
		raw, given := input[f.Name]
		if given && string(raw) == "null" {
			given = false
		}
		if !given {
			switch {
			case f.Default != "":
				v, err := parseText(f, f.Default)
				if err == nil {
					out.Values[f.Name] = v
				}
			case f.Required:
				errs = append(errs, field.Required(path.Key(f.Name), "the Entry requires "+label(f)))
			}
		} else {
			v, err := parseValue(f, raw)
			if err != nil {
				errs = append(errs, field.Invalid(path.Key(f.Name), "", err.Error()))
				continue
			}
			if s, ok := v.(string); ok && f.Required && strings.TrimSpace(s) == "" {
				errs = append(errs, field.Required(path.Key(f.Name), "the Entry requires "+label(f)))
				continue
			}
			out.Values[f.Name] = v
		}
		if f.Role == platformv1.PrimaryInputRole {
			out.Text, _ = out.Values[f.Name].(string)
		}
	}
	return out, errs
}

// CheckMessage checks the text of a follow-up message.
func CheckMessage(text string, path *field.Path) field.ErrorList {
	switch {
	case strings.TrimSpace(text) == "":
		return field.ErrorList{field.Required(path, "a message has text")}
	case len(text) > MaxMessageLength:
		return field.ErrorList{field.TooLong(path, "", MaxMessageLength)}
	case !utf8.ValidString(text):
		return field.ErrorList{field.Invalid(path, "", "must be UTF-8 text")}
	}
	return nil
}

func parseValue(f *platformv1.EntryField, raw json.RawMessage) (any, error) {
	switch f.Type {
	case platformv1.NumberField:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("%s is a number", label(f))
		}
		return parseText(f, n.String())
	case platformv1.BooleanField:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%s is true or false", label(f))
		}
		return b, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is text", label(f))
	}
	return parseText(f, s)
}

// parseText reads a field's value given as text (a default, or a submitted string).
func parseText(f *platformv1.EntryField, s string) (any, error) {
	limit := MaxFieldLength
	if f.Role == platformv1.PrimaryInputRole {
		limit = MaxMessageLength
	}
	switch {
	case len(s) > limit:
		return nil, fmt.Errorf("%s is at most %d bytes", label(f), limit)
	case !utf8.ValidString(s):
		return nil, fmt.Errorf("%s is UTF-8 text", label(f))
	}
	switch f.Type {
	case platformv1.NumberField:
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%s is a number", label(f))
		}
		return n, nil
	case platformv1.BooleanField:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%s is true or false", label(f))
		}
		return b, nil
	case platformv1.ChoiceField:
		for _, c := range f.Choices {
			if c.Value == s {
				return s, nil
			}
		}
		values := make([]string, 0, len(f.Choices))
		for _, c := range f.Choices {
			values = append(values, c.Value)
		}
		return nil, fmt.Errorf("%s is one of %s", label(f), strings.Join(values, ", "))
	case platformv1.TextField:
		if strings.ContainsAny(s, "\r\n") {
			return nil, fmt.Errorf("%s is one line of text", label(f))
		}
	}
	return s, nil
}

func label(f *platformv1.EntryField) string {
	if f.Label != "" {
		return fmt.Sprintf("%q", f.Label)
	}
	return fmt.Sprintf("field %q", f.Name)
}

func fieldNames(fields []platformv1.EntryField) []string {
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		names = append(names, f.Name)
	}
	return names
}
