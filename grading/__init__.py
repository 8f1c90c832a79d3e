"""The grader: `python grader.py NAME` grades a submission of exercise NAME."""
