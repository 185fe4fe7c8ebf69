package launchplan

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of launch.json at Version; its
// $id is SchemaID.
//
//go:embed launch.schema.json
var Schema []byte

// SchemaID is the $id of Schema. It names the format version.
const SchemaID = "https://parc.dev/schema/launch/v1.json"
