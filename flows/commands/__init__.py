"""The `scalehop` verbs beyond the core ones in `flows.cli`: each module adds its verbs with `add_commands`."""
