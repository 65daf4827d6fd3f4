"""The built-in node kinds, each registered through the node spec like a third-party plugin."""
