"""Charts: the Runs, Compare, Preview and reward-lab figures as plain plotly.js data, their
controls, and how a figure reaches ``gr.Plot``."""
