package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DeterministicProvider answers without a model: its answer is a pure function of the agent's
// instructions, the message and the attempt, so flows run offline and tests are repeatable.
//
// Directive lines in the instructions choose the action (the first action directive wins; other
// lines are ordinary instructions):
//
//	@respond [text]               respond (the default when no directive is present)
//	@showResult [text]            showResult
//	@createTask <title>           createTask
//	@showError <message>          showError: the step fails with the message
//	@requestInput <prompt>        requestInput: the run waits for text
//	@requestConfirmation <prompt> requestConfirmation: the run waits for yes or no
//	@requestChoice <prompt>       requestChoice, with one line per option:
//	@option <value> [label]
//	@transientFailures <n>        the first n attempts fail as a model endpoint 5xx would
//	@latencyMs <n>                the answer takes n milliseconds, like a model call (at most 60000)
//	@deliverable <name> [type]    the answer declares a deliverable file named name whose content
//	                              is the answer's text (media type text/markdown by default)
//
// In texts and prompts, {{input}} stands for the message. Without a text, respond and
// showResult answer "Deterministic response <digest>: <message>", where digest is the first 12
// hex digits of SHA-256(instructions, NUL, message).
type DeterministicProvider struct{}

// Name is Deterministic.
func (DeterministicProvider) Name() string { return Deterministic }

// Invoke answers per the directives of req.Agent.Instructions.
func (DeterministicProvider) Invoke(ctx context.Context, req Request) (Action, error) {
	if err := ctx.Err(); err != nil {
		return Action{}, err
	}
	var (
		act          *Action
		options      []Option
		deliverables []Deliverable
		transient    int
		latency      time.Duration
	)
	for _, line := range strings.Split(req.Agent.Instructions, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "@") {
			continue
		}
		name, arg, _ := strings.Cut(line[1:], " ")
		arg = strings.ReplaceAll(strings.TrimSpace(arg), "{{input}}", req.Message)
		switch name {
		case "option":
			value, label, _ := strings.Cut(arg, " ")
			if value != "" {
				options = append(options, Option{Value: value, Label: strings.TrimSpace(label)})
			}
		case "deliverable":
			name, mediaType, _ := strings.Cut(arg, " ")
			if mediaType = strings.TrimSpace(mediaType); mediaType == "" {
				mediaType = "text/markdown"
			}
			if name != "" {
				deliverables = append(deliverables, Deliverable{Name: name, MediaType: mediaType})
			}
		case "transientFailures":
			transient, _ = strconv.Atoi(arg)
		case "latencyMs":
			n, _ := strconv.Atoi(arg)
			latency = time.Duration(min(max(n, 0), 60000)) * time.Millisecond
		case ActionRespond, ActionShowResult, ActionShowError:
			if act == nil {
				act = &Action{Type: name, Text: arg}
			}
		case ActionCreateTask:
			if act == nil {
				act = &Action{Type: name, Title: arg}
			}
		case ActionRequestInput, ActionRequestConfirmation, ActionRequestChoice:
			if act == nil {
				act = &Action{Type: name, Prompt: arg}
			}
		}
	}
	if latency > 0 {
		select {
		case <-ctx.Done():
			return Action{}, ctx.Err()
		case <-time.After(latency):
		}
	}
	if req.Attempt <= transient {
		return Action{}, &TransientError{Err: fmt.Errorf("deterministic provider: simulated transient failure of attempt %d", req.Attempt)}
	}
	if act == nil {
		act = &Action{Type: ActionRespond}
	}
	switch act.Type {
	case ActionRespond, ActionShowResult, ActionCreateTask:
		if act.Text == "" {
			sum := sha256.Sum256([]byte(req.Agent.Instructions + "\x00" + req.Message))
			act.Text = "Deterministic response " + hex.EncodeToString(sum[:])[:12] + ": " + req.Message
		}
		for _, d := range deliverables {
			d.Content = act.Text
			act.Deliverables = append(act.Deliverables, d)
		}
	case ActionRequestChoice:
		if len(options) == 0 {
			return Action{}, fmt.Errorf("deterministic provider: agent %q requests a choice without @option lines", req.Agent.Name)
		}
		act.Options = options
	}
	act.ModelProvider, act.Model = Deterministic, "deterministic"
	return *act, nil
}
