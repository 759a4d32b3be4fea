# The OCI registry the distribution tests push to and pull from: Debian's
# `docker-registry` (the CNCF distribution server), installed on first use.
# The tests (tests/integration/distribution.rs) start it themselves on a free
# loopback port with a temporary storage directory and stop it afterwards;
# they fail, rather than skip, when it is missing. Included by the root
# Makefile after mk/interpreters.mk (which defines SUDO).

OCI_REGISTRY_BIN := /usr/bin/docker-registry
OCI_REGISTRY_PACKAGES := docker-registry

.PHONY: oci-registry

oci-registry: | $(OCI_REGISTRY_BIN)

$(OCI_REGISTRY_BIN):
	$(SUDO) apt-get update -qq >/dev/null
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(OCI_REGISTRY_PACKAGES) >/dev/null
