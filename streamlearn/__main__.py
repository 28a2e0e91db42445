"""``python -m streamlearn`` is the ``streamlearn`` command."""

from streamlearn.cli import main

main()
