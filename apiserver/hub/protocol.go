package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// recordSeparator ends every message of the JSON hub protocol.
const recordSeparator = 0x1E

// Message types of the hub protocol.
const (
	typeInvocation       = 1
	typeStreamItem       = 2
	typeCompletion       = 3
	typeStreamInvocation = 4
	typeCancelInvocation = 5
	typePing             = 6
	typeClose            = 7
	typeAck              = 8
	typeSequence         = 9
)

// maxInvocationID bounds the invocation ids a client may choose (the protocol lets a callee set
// limits and close the connection beyond them).
const maxInvocationID = 128

// errProtocol is a message the hub cannot take: the connection is closed with its reason.
var errProtocol = errors.New("protocol error")

// message is one message a client sends, as far as the hub reads it.
type message struct {
	Type         int               `json:"type"`
	InvocationID *string           `json:"invocationId"`
	Target       string            `json:"target"`
	Arguments    []json.RawMessage `json:"arguments"`
	StreamIDs    []string          `json:"streamIds"`
	Error        string            `json:"error"`
}

// splitFrame splits what a client sent (the unfinished tail of its previous frame, then a frame)
// into complete messages, each without its separator, and the unfinished tail left, which the
// caller keeps for the next frame. Several messages may share a frame; a message may span
// frames.
func splitFrame(buf []byte) (messages [][]byte, rest []byte) {
	for {
		i := bytes.IndexByte(buf, recordSeparator)
		if i < 0 {
			return messages, buf
		}
		messages = append(messages, buf[:i])
		buf = buf[i+1:]
	}
}

// parseMessage reads one message of the JSON hub protocol.
func parseMessage(b []byte) (message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: a message is not a JSON object", errProtocol)
	}
	if m.Type < typeInvocation || m.Type > typeSequence {
		return m, fmt.Errorf("%w: unknown message type %d", errProtocol, m.Type)
	}
	if m.InvocationID != nil && len(*m.InvocationID) > maxInvocationID {
		return m, fmt.Errorf("%w: an invocation id is longer than %d bytes", errProtocol, maxInvocationID)
	}
	if (m.Type == typeInvocation || m.Type == typeStreamInvocation) && m.Target == "" {
		return m, fmt.Errorf("%w: an invocation names no target", errProtocol)
	}
	if m.Type == typeStreamInvocation && m.InvocationID == nil {
		return m, fmt.Errorf("%w: a stream invocation has no invocation id", errProtocol)
	}
	return m, nil
}

// handshake reads the client's handshake request: the JSON protocol, version 1, is the only one
// the hub speaks. The error is what the handshake response says.
func handshake(b []byte) error {
	var req struct {
		Protocol *string `json:"protocol"`
		Version  *int    `json:"version"`
	}
	if err := json.Unmarshal(b, &req); err != nil || req.Protocol == nil || req.Version == nil {
		return errors.New("the first message must be the handshake request {\"protocol\":\"json\",\"version\":1}")
	}
	if *req.Protocol != "json" {
		return fmt.Errorf("requested protocol %s is not available: the hub speaks json only", strconv.Quote(truncate(*req.Protocol, 64)))
	}
	if *req.Version != 1 {
		return fmt.Errorf("the json protocol version %d is not supported: the hub speaks version 1", *req.Version)
	}
	return nil
}

// Encoded messages the hub sends.
var (
	handshakeOK = []byte("{}\x1e")
	pingMessage = []byte("{\"type\":6}\x1e")
)

func handshakeError(reason string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{reason})
	return append(b, recordSeparator)
}

// invocation encodes a non-blocking invocation of target with one argument (a JSON value).
func invocation(target string, argument json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		Type      int               `json:"type"`
		Target    string            `json:"target"`
		Arguments []json.RawMessage `json:"arguments"`
	}{typeInvocation, target, []json.RawMessage{argument}})
	return append(b, recordSeparator)
}

// completion encodes the end of the client's invocation id: an error when reason is set.
func completion(id, reason string) []byte {
	b, _ := json.Marshal(struct {
		Type         int    `json:"type"`
		InvocationID string `json:"invocationId"`
		Error        string `json:"error,omitempty"`
	}{typeCompletion, id, reason})
	return append(b, recordSeparator)
}

// closeMessage encodes the hub closing the connection: with the reason of an error, and whether
// a client with automatic reconnection should reconnect.
func closeMessage(reason string, allowReconnect bool) []byte {
	b, _ := json.Marshal(struct {
		Type           int    `json:"type"`
		Error          string `json:"error,omitempty"`
		AllowReconnect bool   `json:"allowReconnect,omitempty"`
	}{typeClose, reason, allowReconnect})
	return append(b, recordSeparator)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
