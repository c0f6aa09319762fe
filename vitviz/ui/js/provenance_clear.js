// A new picture (any change of the metrics line) clears the provenance map. __PROMPT__: the box's prompt.
() => [null, __PROMPT__, null, null, null]
