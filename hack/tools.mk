# Tool pins for the Makefile. Each tool is built from the Go module proxy with `go install` into
# ./bin as <name>-<version>, and ./bin/<name> links to the pinned build, so changing a version
# rebuilds exactly that tool.

LOCALBIN ?= $(abspath bin)

##@ Tools

# controller-gen: v0.23.0 is built against k8s.io/* v0.37, the line this module uses.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
# openapi-gen must match the kube-openapi library the generated code compiles against, so its
# version is read from go.mod.
OPENAPI_GEN_VERSION ?= $(shell go list -m -f '{{.Version}}' k8s.io/kube-openapi)

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
OPENAPI_GEN ?= $(LOCALBIN)/openapi-gen

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)-$(CONTROLLER_TOOLS_VERSION) ## Build controller-gen into ./bin if needed.
	@ln -sf $(notdir $<) $(CONTROLLER_GEN)
$(CONTROLLER_GEN)-$(CONTROLLER_TOOLS_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: openapi-gen
openapi-gen: $(OPENAPI_GEN)-$(OPENAPI_GEN_VERSION) ## Build openapi-gen into ./bin if needed.
	@ln -sf $(notdir $<) $(OPENAPI_GEN)
$(OPENAPI_GEN)-$(OPENAPI_GEN_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$@,k8s.io/kube-openapi/cmd/openapi-gen,$(OPENAPI_GEN_VERSION))

# go-install-tool builds package $(2) at version $(3) and stores it as $(1).
define go-install-tool
@set -e; tmp=$$(mktemp -d); \
echo "go install $(2)@$(3)"; \
GOBIN=$$tmp go install $(2)@$(3); \
mv $$tmp/$$(basename $(2)) $(1); \
rm -rf $$tmp
endef
