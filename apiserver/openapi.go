package apiserver

import (
	"github.com/spf13/cobra"

	"platform.dev/platform/apiserver/httpapi/service"
)

// NewOpenAPICommand prints the service API's OpenAPI 3.1 document: outside Development and
// Testing the server does not serve it, so this is how everyone else reads the contract.
func NewOpenAPICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the service API's OpenAPI 3.1 document (served at /openapi/v1.json in Development only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := service.OpenAPIDocument()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(doc, '\n'))
			return err
		},
	}
}
