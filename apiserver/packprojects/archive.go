package packprojects

import (
	"errors"
	"fmt"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/pack"
)

// ErrTooLarge: the generated archive exceeds the Pack limit of compressed input.
var ErrTooLarge = fmt.Errorf("the generated archive exceeds %d bytes, the largest Pack archive", pack.MaxCompressedBytes)

// FileName is the download name of a Pack's archive.
func FileName(c Coordinate) string { return c.Publisher + "." + c.Name + "-" + c.Version + ".zip" }

// Generate writes the archive of a valid preview under coordinate c with pack.Write and reads it
// back with pack.Read, as an upload of it would be read. The same preview of the same objects
// gives the same bytes. A refusal of either is a *pack.Error (a resource the kind's schema
// refuses, say), which the caller reports with its reason.
func (p *Preview) Generate(c Coordinate) ([]byte, *pack.Archive, error) {
	m, files, err := p.Contents(c)
	if err != nil {
		return nil, nil, err
	}
	data, err := pack.Write(m, "", files)
	if err != nil {
		return nil, nil, err
	}
	if len(data) > pack.MaxCompressedBytes {
		return nil, nil, ErrTooLarge
	}
	a, err := pack.Read(data, FileName(c))
	if err != nil {
		var perr *pack.Error
		if errors.As(err, &perr) {
			return nil, nil, perr
		}
		return nil, nil, fmt.Errorf("the generated archive does not read back: %w", err)
	}
	return data, a, nil
}

// Digest is `sha256:<hex>` of an archive, as pack.Read computes it.
func Digest(a *pack.Archive) platformv1.Digest { return a.Digest }
