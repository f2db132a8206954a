from refscope.app.cli import run

run()
