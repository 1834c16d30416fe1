package provider

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Choices are what the offline model reads in a request: its subject and the choices made, from
// "Key: value" lines of the message (Subject or Request, Format, Detail or Detail level, Style)
// and from the answers to the agent's own questions.
type Choices struct {
	Subject string
	// Format of a report: summary, table or narrative ("" for sections).
	Format string
	// Detail of a report: brief, standard or detailed.
	Detail string
	// Style of a note: formal, friendly or concise.
	Style string
}

// The words the offline model understands as choices.
var (
	reportFormats = []string{"summary", "table", "narrative"}
	reportDetails = []string{"brief", "standard", "detailed"}
	noteStyles    = []string{"formal", "friendly", "concise"}
)

// maxSubjectRunes bounds the subject an answer repeats.
const maxSubjectRunes = 120

// choicesOf reads the subject and the choices of a request.
func choicesOf(req Request) Choices {
	var c Choices
	var rest []string
	message := req.Message
	// A WorkItem submitted without a prompt reaches an agent as its JSON: its title and
	// instruction are the request.
	if item, ok := workItemOf(message); ok {
		message = strings.Join(item.parts("message", "request", "title", "instruction"), "\n")
	}
	pick := func(value string) {
		v := strings.ToLower(strings.TrimSpace(value))
		switch {
		case contains(reportFormats, v):
			c.Format = v
		case contains(reportDetails, v):
			c.Detail = v
		case contains(noteStyles, v):
			c.Style = v
		}
	}
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		switch k := strings.ToLower(strings.TrimSpace(key)); {
		case ok && (k == "subject" || k == "request"):
			if c.Subject == "" {
				c.Subject = strings.TrimSpace(value)
			}
		case ok && (k == "format" || k == "detail" || k == "detail level" || k == "style"):
			pick(value)
		default:
			rest = append(rest, line)
		}
	}
	for _, turn := range req.Transcript {
		for _, call := range turn.Calls {
			if IsBuiltin(call.Name) && !call.IsError {
				pick(call.Result)
			}
		}
	}
	if c.Subject == "" && len(rest) > 0 {
		c.Subject = rest[0]
	}
	c.Subject = strings.TrimRight(strings.TrimSpace(c.Subject), ".!?")
	if utf8.RuneCountInString(c.Subject) > maxSubjectRunes {
		c.Subject = string([]rune(c.Subject)[:maxSubjectRunes]) + "…"
	}
	if c.Subject == "" {
		c.Subject = "your request"
	}
	return c
}

// workItem is a WorkItem's input, which reaches an agent as its JSON when it was submitted
// without a prompt.
type workItem map[string]any

func workItemOf(message string) (workItem, bool) {
	var item workItem
	return item, strings.HasPrefix(message, "{") && json.Unmarshal([]byte(message), &item) == nil
}

// parts are the item's non-empty texts under keys, in that order.
func (w workItem) parts(keys ...string) []string {
	var parts []string
	for _, k := range keys {
		if s, ok := w[k].(string); ok && strings.TrimSpace(s) != "" {
			parts = append(parts, strings.TrimSpace(s))
		}
	}
	return parts
}

// asked is what a request asks, as a person wrote it: the message, or a WorkItem's instruction
// (its title when it has none) rather than its JSON.
func asked(message string) string {
	if item, ok := workItemOf(message); ok {
		if parts := item.parts("message", "request", "instruction", "title"); len(parts) > 0 {
			return parts[0]
		}
	}
	return message
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// promptOf is the prompt of a built-in question's arguments.
func promptOf(arguments string) string {
	var args struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal([]byte(arguments), &args)
	return strings.TrimSpace(args.Prompt)
}

// Compose writes the offline model's answer in Markdown: a report outline ("report"), a note
// ("note"), or, for "" (no text given), whichever the choices point to, else a short reply that
// says what was asked. The same choices always give the same text.
func Compose(kind string, c Choices) string {
	switch {
	case kind == "report" || kind == "" && (c.Format != "" || c.Detail != ""):
		return composeReport(c)
	case kind == "note" || kind == "" && c.Style != "":
		return composeNote(c)
	}
	return fmt.Sprintf("Here is an answer to %s, written offline from your request alone.", quote(c.Subject))
}

// section is a part of a report outline: what it covers and, in detail, its points.
type section struct {
	name, covers string
	points       []string
}

func sectionsOf(subject, detail string) []section {
	all := []section{
		{"Overview", "what " + subject + " covers and why it matters now",
			[]string{"Scope and period covered", "The question the report answers"}},
		{"Key figures", "the main numbers behind " + subject,
			[]string{"Totals and their change over the period", "The largest contributors"}},
		{"Trends", "how " + subject + " has developed",
			[]string{"Direction and pace of change", "Unusual movements worth explaining"}},
		{"Risks", "what could go wrong and how likely it is",
			[]string{"Open issues and their owners", "Early warning signs to watch"}},
		{"Recommendations", "what to do next, in order of impact",
			[]string{"Quick wins for the coming weeks", "Decisions that need an owner"}},
	}
	switch detail {
	case "brief":
		return []section{all[0], all[1], all[4]}
	case "detailed":
		return all
	}
	return []section{all[0], all[1], all[2], all[4]}
}

func composeReport(c Choices) string {
	detail := c.Detail
	if detail == "" {
		detail = "standard"
	}
	sections := sectionsOf(c.Subject, detail)
	var b strings.Builder
	title := capitalize(c.Subject)
	switch c.Format {
	case "summary":
		fmt.Fprintf(&b, "## %s: summary outline\n\nA short outline of the report (detail level: %s):\n\n", title, detail)
		for i, s := range sections {
			fmt.Fprintf(&b, "%d. **%s**: %s\n", i+1, s.name, s.covers)
		}
	case "table":
		fmt.Fprintf(&b, "## %s: report outline as a table\n\nThe report's sections (detail level: %s):\n\n", title, detail)
		if detail == "detailed" {
			b.WriteString("| Section | What it covers | Key points |\n|---|---|---|\n")
		} else {
			b.WriteString("| Section | What it covers |\n|---|---|\n")
		}
		for _, s := range sections {
			fmt.Fprintf(&b, "| %s | %s |", s.name, capitalize(s.covers))
			if detail == "detailed" {
				fmt.Fprintf(&b, " %s |", strings.Join(s.points, "; "))
			}
			b.WriteString("\n")
		}
	case "narrative":
		fmt.Fprintf(&b, "## %s: narrative report outline\n\n", title)
		fmt.Fprintf(&b, "This report tells the story of %s in %d parts (detail level: %s).\n", c.Subject, len(sections), detail)
		for _, s := range sections {
			fmt.Fprintf(&b, "\n**%s.** It explains %s.", s.name, s.covers)
			if detail == "detailed" {
				fmt.Fprintf(&b, " It looks at %s, and at %s.", lowerFirst(s.points[0]), lowerFirst(s.points[1]))
			}
			b.WriteString("\n")
		}
	default:
		fmt.Fprintf(&b, "## %s: report outline\n\nThe report in %d sections (detail level: %s):\n", title, len(sections), detail)
		for _, s := range sections {
			fmt.Fprintf(&b, "\n### %s\n\n%s.\n", s.name, capitalize(s.covers))
			if detail != "brief" {
				b.WriteString("\n")
				for _, p := range s.points {
					fmt.Fprintf(&b, "- %s\n", p)
				}
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func composeNote(c Choices) string {
	switch c.Style {
	case "formal":
		return fmt.Sprintf("Dear colleague,\n\nThank you for your request regarding %s. I have reviewed what is needed and "+
			"propose to address it in three steps: clarify the scope, gather the relevant information, and report back "+
			"with a recommendation.\n\nKind regards", c.Subject)
	case "concise":
		return fmt.Sprintf("**%s**\n\n- Scope: confirm what is needed\n- Action: gather the facts\n- Next: a short recommendation",
			capitalize(c.Subject))
	}
	return fmt.Sprintf("Hi! Happy to help with %s. Here is the plan: first we pin down exactly what you need, then I "+
		"pull together the facts, and finally you get a short recommendation you can act on. Just say if anything "+
		"should change.", c.Subject)
}

func quote(s string) string { return "\u201c" + s + "\u201d" }

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}
